import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { EVENT_TYPES } from '../../events/events';
import type { DeliveryRecord } from '../webhook-subscriptions.service';

const STATUSES = ['pending', 'delivered', 'failed', 'cancelled'];

/** One event for one subscription, and how its delivery went. */
@ApiSchema({ name: 'WebhookDelivery' })
export class WebhookDeliveryDto {
  /** The delivery's `webhook-id`, the same on every attempt */
  @ApiProperty({ pattern: '^msg_[0-9a-f]{32}$' })
  id!: string;

  /** The type of the event delivered */
  @ApiProperty({ enum: [...EVENT_TYPES] })
  eventType!: string;

  /** pending until a 2xx answer (delivered), the end of the retry window (failed) or the subscription's removal (cancelled) */
  @ApiProperty({ enum: STATUSES })
  status!: string;

  /** How many attempts were made */
  @ApiProperty({
    type: 'integer',
    format: 'int32',
    minimum: 0,
    maximum: 2147483647,
  })
  attempts!: number;

  /** When the event happened */
  createdAt!: Date;

  /** When the last attempt was made */
  lastAttemptAt?: Date;

  /** The HTTP status of the last answer */
  @ApiPropertyOptional({
    type: 'integer',
    format: 'int32',
    minimum: 100,
    maximum: 599,
  })
  lastStatusCode?: number;

  /** Why the last attempt failed */
  lastError?: string;

  /** When the next attempt is due, while the delivery is pending */
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
