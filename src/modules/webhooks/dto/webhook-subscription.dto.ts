import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { EVENT_TYPE_ENUM } from '../../../platform/events';
import type { WebhookSubscription } from '../webhook-subscription.entity';

/** A subscription as the API shows it: never its secret, except once, at creation. */
@ApiSchema({ name: 'WebhookSubscription' })
export class WebhookSubscriptionDto {
  /** The subscription's id, made by the service */
  @ApiProperty({
    format: 'uuid',
    example: '3f2c8a4e-5b1d-4c7e-9a0f-6d2e8b1c4a57',
  })
  id!: string;

  /** Where each event is POSTed */
  @ApiProperty({ format: 'uri', example: 'https://example.com/hooks/plants' })
  url!: string;

  /** The event types it receives; absent when it receives every type, those added later included */
  @ApiPropertyOptional({
    type: 'array',
    items: { type: 'string', enum: [...EVENT_TYPE_ENUM] },
    minItems: 1,
    uniqueItems: true,
    example: ['plant.added'],
  })
  events?: string[];

  /**
   * When it was created
   * @example "2026-11-26T09:30:00.000Z"
   */
  createdAt!: Date;

  /** How many attempts its receiver failed in a row, across deliveries; absent while it succeeds */
  @ApiPropertyOptional({
    type: 'integer',
    format: 'int32',
    minimum: 1,
    maximum: 32767,
    example: 5,
  })
  consecutiveFailures?: number;

  /**
   * While its receiver keeps failing, none of its deliveries is tried until then; then one
   * attempt probes the receiver, and a success resumes them all. Absent when not paused
   * @example "2026-11-26T09:31:00.000Z"
   */
  pausedUntil?: Date;

  static from({
    id,
    url,
    eventTypes,
    createdAt,
    consecutiveFailures,
    pausedUntil,
  }: WebhookSubscription): WebhookSubscriptionDto {
    return {
      id,
      url,
      events: eventTypes ?? undefined,
      createdAt,
      consecutiveFailures: consecutiveFailures || undefined,
      pausedUntil: pausedUntil ?? undefined,
    };
  }
}

/** The answer to a creation: the subscription and, this once, its signing secret. */
@ApiSchema({ name: 'NewWebhookSubscriptionCreated' })
export class CreatedWebhookSubscriptionDto extends WebhookSubscriptionDto {
  /**
   * The Standard Webhooks signing secret (`whsec_...`) to verify deliveries with; it is not
   * shown again
   */
  @ApiProperty({
    pattern: '^whsec_[A-Za-z0-9+/]{43}=$',
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw7X9xZ+3y2pk=',
  })
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
