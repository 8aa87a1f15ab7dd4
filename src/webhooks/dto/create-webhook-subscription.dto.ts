import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  ArrayUnique,
  IsArray,
  IsIn,
  IsString,
} from 'class-validator';
import { ValidateIf } from 'class-validator';
import { EVENT_TYPES } from '../../events/events';

const EVENTS_MESSAGE = `events must be a non-empty list of event types, each one of ${EVENT_TYPES.join(', ')}, each at most once`;

@ApiSchema({ name: 'NewWebhookSubscription' })
export class CreateWebhookSubscriptionDto {
  /**
   * Where to POST each event: an absolute http or https URL on a public address (a private
   * one only when the service runs with WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true)
   */
  @ApiProperty({ format: 'uri', example: 'https://example.com/hooks/plants' })
  @IsString({ message: 'url must be a string' })
  url!: string;

  /** The event types to receive; every type, those added later included, when absent */
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', enum: [...EVENT_TYPES] },
    minItems: 1,
    maxItems: EVENT_TYPES.length,
    uniqueItems: true,
    example: ['plant.added'],
  })
  // absent means every type; null is not a list
  @ValidateIf((dto: CreateWebhookSubscriptionDto) => dto.events !== undefined)
  @IsArray({ message: EVENTS_MESSAGE })
  @ArrayNotEmpty({ message: EVENTS_MESSAGE })
  @ArrayMaxSize(EVENT_TYPES.length, { message: EVENTS_MESSAGE })
  @ArrayUnique({ message: EVENTS_MESSAGE })
  @IsIn(EVENT_TYPES, { each: true, message: EVENTS_MESSAGE })
  events?: string[];
}
