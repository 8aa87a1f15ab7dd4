import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { EVENT_TYPE_ENUM } from '../../../platform/events';
import type { DeliveryRecord } from '../webhook-subscriptions.service';

const STATUSES = ['pending', 'delivered', 'failed', 'cancelled'];

/** One event for one subscription, and how its delivery went. */
@ApiSchema({ name: 'WebhookDelivery' })
export class WebhookDeliveryDto {
  /** The delivery's `webhook-id`, the same on every attempt */
  @ApiProperty({
    pattern: '^msg_[0-9a-f]{32}$',
    example: 'msg_5e3b0c9f1a7d4e2b8c6f0a1d3e5b7c9f',
  })
  id!: string;

  /** The type of the event delivered */
  @ApiProperty({ enum: [...EVENT_TYPE_ENUM], example: 'plant.added' })
  eventType!: string;

  /** pending until a 2xx answer (delivered), the end of the retry window (failed) or the subscription's removal (cancelled) */
  @ApiProperty({ enum: STATUSES, example: 'pending' })
  status!: string;

  /** How many attempts were made */
  @ApiProperty({
    type: 'integer',
    format: 'int32',
    minimum: 0,
    maximum: 2147483647,
    example: 2,
  })
  attempts!: number;

  /**
   * When the event happened
   * @example "2026-11-26T09:30:00.000Z"
   */
  createdAt!: Date;

  /**
   * When the last attempt was made
   * @example "2026-11-26T09:30:05.000Z"
   */
  lastAttemptAt?: Date;

  /** The HTTP status of the last answer */
  @ApiPropertyOptional({
    type: 'integer',
    format: 'int32',
    minimum: 100,
    maximum: 599,
    example: 503,
  })
  lastStatusCode?: number;

  /**
   * Why the last attempt failed
   * @example "the receiver answered 503"
   */
  lastError?: string;

  /**
   * When the next attempt is due, while the delivery is pending
   * @example "2026-11-26T09:30:15.000Z"
   */
  nextAttemptAt?: Date;

  static from(delivery: DeliveryRecord): WebhookDeliveryDto {
    return {
      id: delivery.id,
      eventType: delivery.eventType,
      status: delivery.status,
      attempts: delivery.attempts,
      createdAt: delivery.createdAt,
      lastAttemptAt: delivery.lastAttemptAt ?? undefined,
      lastStatusCode: delivery.lastStatusCode ?? undefined,
      lastError: delivery.lastError ?? undefined,
      nextAttemptAt:
        delivery.status === 'pending' ? delivery.nextAttemptAt : undefined,
    };
  }
}
