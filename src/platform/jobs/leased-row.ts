import {
  Column,
  IsNull,
  LessThan,
  MoreThan,
  PrimaryColumn,
  type FindOptionsWhere,
} from 'typeorm';
import { STORED_TIME_SLACK_MS } from '../database/database-clock.service';

/**
 * A row one instance at a time holds for a while, by name: a periodic job's (`scheduled_jobs`)
 * or an event handler's (`event_handlers`), each of which adds its own state. An instance takes
 * the lease with a conditional write (`takeableLeases`), and renews or gives it back only with
 * `leased_by` its own; the times are the database's (docs/decisions.md, "Time that decides for
 * others").
 */
export abstract class LeasedRow {
  /** As `@Job()` or `@EventHandler()` declares it: `webhooks.retention`. */
  @PrimaryColumn({ type: 'varchar', length: 64 })
  name!: string;

  /** The instance holding the lease now (see `leasedUntil`). */
  @Column({ name: 'leased_by', type: 'varchar', length: 80, nullable: true })
  leasedBy!: string | null;

  /** Until when `leasedBy` holds the row; past it another instance may take it over. */
  @Column({ name: 'leased_until', type: Date, nullable: true })
  leasedUntil!: Date | null;
}

/**
 * The leases an instance may take at `now` for `leaseMs`: none, one run out, or one ending
 * further ahead than any instance could have set it (STORED_TIME_SLACK_MS past a lease from
 * `now`), which came from a clock that was ahead and holds nothing. Alternatives, to combine
 * with the row's own conditions.
 */
export function takeableLeases(
  now: Date,
  leaseMs: number,
): FindOptionsWhere<LeasedRow>[] {
  return [
    { leasedUntil: IsNull() },
    { leasedUntil: LessThan(now) },
    {
      leasedUntil: MoreThan(
        new Date(now.getTime() + leaseMs + STORED_TIME_SLACK_MS),
      ),
    },
  ];
}
