import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import {
  bigintTransformer,
  smallIntegerTransformer,
} from '../database/column-transformers';

export type DeliveryStatus = 'pending' | 'delivered' | 'failed' | 'cancelled';

/**
 * The transactional outbox: one row per subscription for each plant added. The rows are
 * written by the `plants_enqueue_webhook_deliveries` trigger (see the Webhooks migration) in
 * the very statement that inserts the plant, so a create that fails writes none and a create
 * that was acknowledged has them even if the process dies the next instant.
 */
@Entity('webhook_deliveries')
@Index('IDX_webhook_deliveries_due', ['status', 'nextAttemptAt'])
export class WebhookDelivery {
  /** The Standard Webhooks `webhook-id`, the same on every attempt. */
  @PrimaryColumn({ type: 'varchar', length: 40 })
  id!: string;

  @Column({ name: 'subscription_id', type: 'varchar', length: 36 })
  subscriptionId!: string;

  @Column({ name: 'plant_id', type: 'bigint', transformer: bigintTransformer })
  plantId!: bigint;

  @Column({ name: 'plant_name', type: 'text' })
  plantName!: string;

  @Column({ name: 'plant_tag', type: 'text', nullable: true })
  plantTag!: string | null;

  @Column({ type: 'varchar', length: 16 })
  status!: DeliveryStatus;

  @Column({ type: 'integer', transformer: smallIntegerTransformer })
  attempts!: number;

  @Column({ name: 'next_attempt_at' })
  nextAttemptAt!: Date;

  @Column({ name: 'last_attempt_at', type: Date, nullable: true })
  lastAttemptAt!: Date | null;

  @Column({
    name: 'last_status_code',
    type: 'integer',
    nullable: true,
    transformer: smallIntegerTransformer,
  })
  lastStatusCode!: number | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  @Column({ name: 'created_at' })
  createdAt!: Date;

  /**
   * Set by the instance sending it, so that several instances on one database send each
   * attempt once; a claim left by a crashed instance expires.
   */
  @Column({ name: 'claimed_until', type: Date, nullable: true })
  claimedUntil!: Date | null;
}
