import { Column, Entity, PrimaryColumn } from 'typeorm';
import { Int64PrimaryColumn, SmallIntegerColumn } from '../database/columns';

/**
 * An event a handler gave up on after its attempts (docs/decisions.md, "Reacting to events"):
 * its cursor moved past it, so that the events after it are handled, and the event is kept
 * here, payload and all, whatever retention does to the log, until it is handled on an
 * operator's request (`events retry`) or dismissed (`events dismiss`).
 */
@Entity('event_handler_skips')
export class SkippedEvent {
  /** The handler's name, as `@EventHandler()` declares it. */
  @PrimaryColumn({ type: 'varchar', length: 64 })
  handler!: string;

  /** The event's place in the log. */
  @Int64PrimaryColumn()
  seq!: bigint;

  @Column({ name: 'event_id', type: 'varchar', length: 36 })
  eventId!: string;

  @Column({ type: 'varchar', length: 64 })
  type!: string;

  @Column({ type: 'text' })
  payload!: string;

  /** When the event was made. */
  @Column({ name: 'created_at', type: Date })
  createdAt!: Date;

  /** Attempts that failed, those of an operator's retries included. */
  @SmallIntegerColumn()
  attempts!: number;

  @Column({ name: 'last_error', type: 'text' })
  lastError!: string;

  @Column({ name: 'skipped_at', type: Date })
  skippedAt!: Date;

  /** Set by `events retry`: the handler's next turn handles it first. */
  @Column({ name: 'retry_requested_at', type: Date, nullable: true })
  retryRequestedAt!: Date | null;
}
