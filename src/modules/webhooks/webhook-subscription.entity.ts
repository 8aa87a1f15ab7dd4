import {
  Check,
  Column,
  CreateDateColumn,
  Entity,
  Index,
  PrimaryColumn,
  type ValueTransformer,
} from 'typeorm';
import { Int64Column, SmallIntegerColumn } from '../../platform/database';

/** Active subscriptions at most: the database holds the cap, whatever runs concurrently. */
export const MAX_ACTIVE_SUBSCRIPTIONS = 100;

/** A list of event types as `a,b`; NULL for every type, those added later included. */
const eventTypesTransformer: ValueTransformer = {
  to: (types: string[] | null | undefined) =>
    types === undefined ? undefined : (types?.join(',') ?? null),
  from: (text: string | null) => (text === null ? null : text.split(',')),
};

/**
 * A receiver of webhooks, managed over HTTP (/webhooks/subscriptions) or with the CLI.
 *
 * Each active subscription holds one of MAX_ACTIVE_SUBSCRIPTIONS slots, unique among the
 * active ones: the cap is a constraint of the table, so concurrent creates on any number of
 * instances cannot pass it (docs/decisions.md, "Webhooks").
 */
@Entity('webhook_subscriptions')
@Index('UQ_webhook_subscriptions_active_slot', ['slot'], {
  unique: true,
  where: '"removed_at" IS NULL',
})
@Check(
  'CHK_webhook_subscriptions_slot',
  `"slot" IS NULL OR ("slot" >= 1 AND "slot" <= ${MAX_ACTIVE_SUBSCRIPTIONS})`,
)
@Check(
  'CHK_webhook_subscriptions_active_has_slot',
  '"removed_at" IS NOT NULL OR "slot" IS NOT NULL',
)
export class WebhookSubscription {
  /** A UUID made by the service. */
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  @Column({ type: 'text' })
  url!: string;

  /** The event types it receives; null for all of them. */
  @Column({
    name: 'event_types',
    type: 'text',
    nullable: true,
    transformer: eventTypesTransformer,
  })
  eventTypes!: string[] | null;

  /**
   * `whsec_<base64>`. Kept in clear, unlike API tokens: signing needs the key itself, where
   * checking a token only needs its hash.
   */
  @Column({ type: 'text' })
  secret!: string;

  /**
   * The caller and Idempotency-Key it was created with, as JSON, when it was: its stored answer
   * holds the secret, which removing the subscription erases there too.
   */
  @Column({ name: 'created_with_key', type: 'text', nullable: true })
  createdWithKey!: string | null;

  @CreateDateColumn({ name: 'created_at' })
  createdAt!: Date;

  @Column({ name: 'removed_at', type: Date, nullable: true })
  removedAt!: Date | null;

  /** Its slot, 1 to MAX_ACTIVE_SUBSCRIPTIONS; kept once it is removed, then free for another. */
  @SmallIntegerColumn({ nullable: true })
  slot!: number | null;

  /**
   * Attempts its receiver failed in a row, across deliveries; 0 after a success.
   */
  @SmallIntegerColumn({ name: 'consecutive_failures', default: 0 })
  consecutiveFailures!: number;

  /**
   * Set when its receiver is paused: none of its deliveries is attempted before it; once past,
   * one attempt probes the receiver. Cleared when a probe succeeds.
   */
  @Column({ name: 'paused_until', type: Date, nullable: true })
  pausedUntil!: Date | null;

  /** Failed probes since it was paused: each doubles the next pause. */
  @SmallIntegerColumn({ name: 'pause_level', default: 0 })
  pauseLevel!: number;

  /**
   * Moves on at each change of its receiver's state: an attempt's outcome counts only in the
   * epoch it began in (receiver-state.ts).
   */
  @SmallIntegerColumn({ name: 'receiver_epoch', default: 0 })
  receiverEpoch!: number;

  /** While in the future, one probe is under way. */
  @Column({ name: 'probe_until', type: Date, nullable: true })
  probeUntil!: Date | null;

  /**
   * The place in the event log up to which its deliveries are made; the events after it wait
   * there, not as rows (a paused subscription's simply wait longer). Set to the log's head when
   * it is made: it receives the events from then on.
   */
  @Int64Column({ default: 0 })
  cursor!: bigint;

  /**
   * Since when its oldest undelivered event has been older than WEBHOOKS_LAG_WARN, as the
   * instance that saw it first wrote (webhook-lag.ts); null while it keeps up.
   */
  @Column({ name: 'lagging_since', type: Date, nullable: true })
  laggingSince!: Date | null;
}
