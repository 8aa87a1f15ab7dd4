import { Column, Entity } from 'typeorm';
import { LeasedRow } from './leased-row';

/**
 * A periodic job's place in its schedule, shared by every instance (docs/decisions.md,
 * "Periodic jobs"): the last tick it ran for, and the lease of the instance running it now.
 * An instance runs a tick only by taking the lease with a conditional write, so each tick runs
 * once, whatever the number of instances.
 */
@Entity('scheduled_jobs')
export class ScheduledJob extends LeasedRow {
  /** The time of the last tick that ran to its end; null before the first. */
  @Column({ name: 'done_tick', type: Date, nullable: true })
  doneTick!: Date | null;

  /** When the last run ended, and how (`done`, `backlog`, `failed`). */
  @Column({ name: 'last_ended_at', type: Date, nullable: true })
  lastEndedAt!: Date | null;

  @Column({ name: 'last_outcome', type: 'varchar', length: 16, nullable: true })
  lastOutcome!: string | null;
}
