import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  ArrayUnique,
  IsArray,
  IsString,
} from 'class-validator';
import { ValidateIf } from 'class-validator';
import { EVENT_TYPE_ENUM, MAX_EVENT_TYPES } from '../../../platform/events';

// which types exist is known at boot: WebhookSubscriptionsService.add checks them
const EVENTS_MESSAGE =
  'events must be a non-empty list of event types, each at most once';
/** An empty list could only mean "nothing": leaving the field out means every type. */
export const EMPTY_EVENTS_MESSAGE =
  'events must name at least one event type; leave events out to receive every type, those added later included';

@ApiSchema({ name: 'NewWebhookSubscription' })
export class CreateWebhookSubscriptionDto {
  /**
   * Where to POST each event: an absolute http or https URL on a public address (a private
   * one only when the service runs with WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true)
   */
  @ApiProperty({ format: 'uri', example: 'https://example.com/hooks/plants' })
  @IsString({ message: 'url must be a string' })
  url!: string;

  /**
   * The event types to receive; every type, those added later included, when absent. An empty
   * list is refused (400): leave the field out instead
   */
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', enum: [...EVENT_TYPE_ENUM] },
    minItems: 1,
    uniqueItems: true,
    example: ['plant.added'],
  })
  // absent means every type; null is not a list
  @ValidateIf((dto: CreateWebhookSubscriptionDto) => dto.events !== undefined)
  @IsArray({ message: EVENTS_MESSAGE })
  @ArrayNotEmpty({ message: EMPTY_EVENTS_MESSAGE })
  @ArrayMaxSize(MAX_EVENT_TYPES, { message: EVENTS_MESSAGE })
  @ArrayUnique({ message: EVENTS_MESSAGE })
  @IsString({ each: true, message: EVENTS_MESSAGE })
  events?: string[];
}
