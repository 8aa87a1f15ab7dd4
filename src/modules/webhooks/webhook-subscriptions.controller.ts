import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  HttpStatus,
  Post,
  Query,
} from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiCreatedResponse,
  ApiExtraModels,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import { RequireScopes } from '../../platform/auth';
import { ErrorBody, errorExamples } from '../../platform/common/errors';
import { UuidParam } from '../../platform/common/validation';
import { Idempotent } from '../../platform/idempotency';
import { CallableUrlPipe } from './callable-url.pipe';
import {
  CreateWebhookSubscriptionDto,
  EMPTY_EVENTS_MESSAGE,
} from './dto/create-webhook-subscription.dto';
import {
  ListDeliveriesQueryDto,
  MAX_DELIVERIES_PAGE,
} from './dto/list-deliveries-query.dto';
import { WebhookDeliveryDto } from './dto/webhook-delivery.dto';
import {
  CreatedWebhookSubscriptionDto,
  WebhookSubscriptionDto,
} from './dto/webhook-subscription.dto';
import {
  MAX_ACTIVE_SUBSCRIPTIONS,
  WebhookSubscriptionsService,
} from './webhook-subscriptions.service';

const SUBSCRIPTION_ID = 'The subscription id, as its creation returned it';
const EXAMPLE_ID = '00000000-0000-4000-8000-000000000000';
const NOT_AN_ID = {
  'Id not a UUID': 'id in the path must be a UUID, got "123"',
};
const NOT_FOUND = {
  description: 'No active subscription has this id',
  type: ErrorBody,
  examples: errorExamples(404, {
    'No such subscription': `no webhook subscription with id ${EXAMPLE_ID} exists`,
  }),
};
const BAD_ID = {
  description: 'The id is not a UUID',
  type: ErrorBody,
  examples: errorExamples(400, NOT_AN_ID),
};

/**
 * Webhook subscriptions over HTTP, for operators who run the service where no shell reaches
 * it; the CLI (`webhooks add|list|remove|deliveries`) does the same through the same service.
 * The model for a new module: docs/adding-a-module.md and docs/conventions.md.
 */
@ApiTags('webhooks')
@ApiExtraModels(WebhookDeliveryDto)
@RequireScopes('webhooks:manage')
@Controller('webhooks/subscriptions')
export class WebhookSubscriptionsController {
  constructor(private readonly subscriptions: WebhookSubscriptionsService) {}

  @Post()
  // the isolation its service creates subscriptions at (webhook-subscriptions.service.ts)
  @Idempotent({ isolation: 'READ COMMITTED' })
  @ApiOperation({
    operationId: 'addWebhookSubscription',
    summary: 'Subscribes a URL to events',
  })
  @ApiCreatedResponse({
    description:
      'The subscription, with its signing secret: store it now, it is not shown again',
    type: CreatedWebhookSubscriptionDto,
  })
  @ApiBadRequestResponse({
    description:
      'A field is missing or wrong, an event type is unknown, the URL is one the service may not call, or 100 subscriptions are active already',
    type: ErrorBody,
    examples: errorExamples(400, {
      'Unknown event type':
        'events must be a non-empty list of event types, each one of plant.added, plant.deleted; unknown: plant.eaten',
      'Empty list of event types': EMPTY_EVENTS_MESSAGE,
      'URL on a private network':
        '127.0.0.1 is not a public address; set WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true to allow it',
    }),
  })
  async create(
    @Body(CallableUrlPipe) subscription: CreateWebhookSubscriptionDto,
  ): Promise<CreatedWebhookSubscriptionDto> {
    return CreatedWebhookSubscriptionDto.from(
      await this.subscriptions.add(
        { url: subscription.url, eventTypes: subscription.events },
        { resolved: true },
      ),
    );
  }

  @Get()
  @ApiOperation({
    operationId: 'listWebhookSubscriptions',
    summary: 'Lists the active subscriptions, oldest first',
  })
  @ApiOkResponse({
    description: `The active subscriptions, without their secrets (at most ${MAX_ACTIVE_SUBSCRIPTIONS})`,
    schema: {
      type: 'array',
      items: { $ref: getSchemaPath(WebhookSubscriptionDto) },
      maxItems: MAX_ACTIVE_SUBSCRIPTIONS,
    },
  })
  async findAll(): Promise<WebhookSubscriptionDto[]> {
    return (await this.subscriptions.listActive()).map((subscription) =>
      WebhookSubscriptionDto.from(subscription),
    );
  }

  @Get(':id')
  @ApiOperation({
    operationId: 'findWebhookSubscription',
    summary: 'Returns an active subscription',
  })
  @ApiOkResponse({
    description: 'The subscription, without its secret',
    type: WebhookSubscriptionDto,
  })
  @ApiBadRequestResponse(BAD_ID)
  @ApiNotFoundResponse(NOT_FOUND)
  async findOne(
    @UuidParam('id', SUBSCRIPTION_ID) id: string,
  ): Promise<WebhookSubscriptionDto> {
    return WebhookSubscriptionDto.from(await this.subscriptions.findActive(id));
  }

  @Delete(':id')
  @HttpCode(HttpStatus.NO_CONTENT)
  @ApiOperation({
    operationId: 'deleteWebhookSubscription',
    summary: 'Stops a subscription and cancels its pending deliveries',
  })
  @ApiNoContentResponse({ description: 'The subscription was stopped' })
  @ApiBadRequestResponse(BAD_ID)
  @ApiNotFoundResponse(NOT_FOUND)
  async remove(@UuidParam('id', SUBSCRIPTION_ID) id: string): Promise<void> {
    await this.subscriptions.remove(id);
  }

  @Get(':id/deliveries')
  @ApiOperation({
    operationId: 'listWebhookDeliveries',
    summary: "Lists a subscription's recent deliveries, newest first",
  })
  @ApiOkResponse({
    description: 'Its deliveries, each with its attempts and their outcome',
    schema: {
      type: 'array',
      items: { $ref: getSchemaPath(WebhookDeliveryDto) },
      maxItems: MAX_DELIVERIES_PAGE,
    },
  })
  @ApiBadRequestResponse({
    description: 'The id is not a UUID, or limit is out of range',
    type: ErrorBody,
    examples: errorExamples(400, {
      ...NOT_AN_ID,
      'Limit out of range': `limit must be an integer between 1 and ${MAX_DELIVERIES_PAGE}`,
    }),
  })
  @ApiNotFoundResponse(NOT_FOUND)
  async deliveries(
    @UuidParam('id', SUBSCRIPTION_ID) id: string,
    @Query() query: ListDeliveriesQueryDto,
  ): Promise<WebhookDeliveryDto[]> {
    return (await this.subscriptions.deliveriesOf(id, query.limit)).map(
      (delivery) => WebhookDeliveryDto.from(delivery),
    );
  }
}
