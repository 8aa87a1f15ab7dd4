import { Column, Entity } from 'typeorm';
import { Int64Column, SmallIntegerColumn } from '../database/columns';
import { LeasedRow } from '../jobs/leased-row';

/**
 * An in-process consumer of the event log (docs/decisions.md, "Reacting to events"): the
 * types it handles, its own cursor, and the lease of the instance handling its events now.
 * Its rows are in the `event_consumers` view, so its events are written, while an instance
 * has been seen running it within the last HANDLER_RETIRED_AFTER.
 */
@Entity('event_handlers')
export class EventHandlerState extends LeasedRow {
  /** The event types it handles, comma-separated. */
  @Column({ name: 'event_types', type: 'text' })
  eventTypes!: string;

  /** The place in the log of the last event it handled, or passed over. */
  @Int64Column({ default: 0 })
  cursor!: bigint;

  /** Failed attempts in a row at the event after the cursor. */
  @SmallIntegerColumn({ default: 0 })
  failures!: number;

  /** No attempt before this, after a failure. */
  @Column({ name: 'retry_at', type: Date, nullable: true })
  retryAt!: Date | null;

  @Column({ name: 'last_error', type: 'text', nullable: true })
  lastError!: string | null;

  /** When an instance last ran it: a handler no release declares any more retires. */
  @Column({ name: 'seen_at', type: Date })
  seenAt!: Date;
}
