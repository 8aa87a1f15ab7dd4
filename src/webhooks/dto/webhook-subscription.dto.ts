import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { EVENT_TYPES } from '../../events/events';
import type { WebhookSubscription } from '../webhook-subscription.entity';

/** A subscription as the API shows it: never its secret, except once, at creation. */
@ApiSchema({ name: 'WebhookSubscription' })
export class WebhookSubscriptionDto {
  /** The subscription's id, made by the service */
  @ApiProperty({ format: 'uuid' })
  id!: string;

  /** Where each event is POSTed */
  @ApiProperty({ format: 'uri' })
  url!: string;

  /** The event types it receives; absent when it receives every type, those added later included */
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', enum: [...EVENT_TYPES] },
    minItems: 1,
    maxItems: EVENT_TYPES.length,
    uniqueItems: true,
  })
  events?: string[];

  /** When it was created */
  createdAt!: Date;

  static from({
    id,
    url,
    eventTypes,
    createdAt,
  }: WebhookSubscription): WebhookSubscriptionDto {
    return { id, url, events: eventTypes ?? undefined, createdAt };
  }
}

/** The answer to a creation: the subscription and, this once, its signing secret. */
@ApiSchema({ name: 'NewWebhookSubscriptionCreated' })
export class CreatedWebhookSubscriptionDto extends WebhookSubscriptionDto {
  /**
   * The Standard Webhooks signing secret (`whsec_...`) to verify deliveries with; it is not
   * shown again
   */
  @ApiProperty({ pattern: '^whsec_[A-Za-z0-9+/]{43}=$' })
  secret!: string;

  static override from(
    subscription: WebhookSubscription,
  ): CreatedWebhookSubscriptionDto {
    return {
      ...WebhookSubscriptionDto.from(subscription),
      secret: subscription.secret,
    };
  }
}
