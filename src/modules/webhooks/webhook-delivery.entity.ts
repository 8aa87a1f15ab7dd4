import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { SmallIntegerColumn } from '../../platform/database';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'cancelled';

/**
 * One event for one subscription, and the state of its delivery. The dispatcher makes the rows
 * from the event log, a subscription's next events at a time, as it has room to send them
 * (delivery-engine.ts): the events themselves are written with their change, so an
 * acknowledged change is delivered even if the process dies the next instant.
 */
@Entity('webhook_deliveries')
// pending rows only: a delivered one leaves it, so the dispatcher's poll stays as fast with a
// million delivered rows as with none
@Index('IDX_webhook_deliveries_due', ['subscriptionId', 'nextAttemptAt'], {
  where: `"status" = 'pending'`,
})
@Index('IDX_webhook_deliveries_subscription', ['subscriptionId', 'createdAt'])
// retention: the oldest rows of a status, and whether an event still has a delivery
@Index('IDX_webhook_deliveries_retention', ['status', 'createdAt'])
@Index('IDX_webhook_deliveries_event', ['eventId'])
export class WebhookDelivery {
  /** The Standard Webhooks `webhook-id`, the same on every attempt. */
  @PrimaryColumn({ type: 'varchar', length: 40 })
  id!: string;

  @Column({ name: 'subscription_id', type: 'varchar', length: 36 })
  subscriptionId!: string;

  /** The outbox row this delivery sends. */
  @Column({ name: 'event_id', type: 'varchar', length: 36 })
  eventId!: string;

  @Column({ type: 'varchar', length: 16 })
  status!: DeliveryStatus;

  @SmallIntegerColumn()
  attempts!: number;

  @Column({ name: 'next_attempt_at', type: Date })
  nextAttemptAt!: Date;

  @Column({ name: 'last_attempt_at', type: Date, nullable: true })
  lastAttemptAt!: Date | null;

  @SmallIntegerColumn({ name: 'last_status_code', nullable: true })
  lastStatusCode!: number | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @Column({ name: 'created_at', type: Date })
  createdAt!: Date;

  /**
   * Set by the instance sending it, so that several instances on one database send each
   * attempt once; a claim left by a crashed instance expires.
   */
  @Column({ name: 'claimed_until', type: Date, nullable: true })
  claimedUntil!: Date | null;

  /** The claim's own token: only its holder records the attempt's outcome. */
  @Column({ name: 'claim_token', type: 'varchar', length: 24, nullable: true })
  claimToken!: string | null;
}
