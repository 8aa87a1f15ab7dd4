import type { Repository } from 'typeorm';
import { STORED_TIME_SLACK_MS } from '../database/database-clock.service';
import { takeableLeases } from './leased-row';
import { ScheduledJob } from './scheduled-job.entity';

/** How a run ended, as `last_outcome` and the metrics say it. */
export type RunOutcome = 'done' | 'backlog' | 'failed';

/**
 * The `scheduled_jobs` rows as one instance uses them: every change is a conditional write,
 * so of the instances that try, exactly one takes a tick, and only the holder of a lease can
 * renew or end it.
 */
export class JobLeases {
  constructor(
    private readonly jobs: Repository<ScheduledJob>,
    /** This instance, as `leased_by` names it. */
    readonly instance: string,
  ) {}

  /** The job's row, made if it is new. */
  async declare(name: string): Promise<void> {
    await this.jobs
      .createQueryBuilder()
      .insert()
      .into(ScheduledJob)
      .values({ name })
      .orIgnore()
      .execute();
  }

  /**
   * Takes the tick at `tick` for `leaseMs` from `now`, if it has not run to its end yet and
   * its lease may be taken (`takeableLeases`); says whether it did. A done tick further ahead
   * than any instance could have written it (STORED_TIME_SLACK_MS past `now`) came from a
   * clock that was ahead, and holds nothing.
   */
  async claim(
    name: string,
    tick: Date,
    now: Date,
    leaseMs: number,
  ): Promise<boolean> {
    const { affected } = await this.jobs
      .createQueryBuilder()
      .update(ScheduledJob)
      .set({
        leasedBy: this.instance,
        leasedUntil: new Date(now.getTime() + leaseMs),
      })
      .where('name = :name', { name })
      .andWhere(
        '(done_tick IS NULL OR done_tick < :tick OR done_tick > :doneBound)',
        { tick, doneBound: new Date(now.getTime() + STORED_TIME_SLACK_MS) },
      )
      .andWhere(takeableLeases(now, leaseMs))
      .execute();
    return affected === 1;
  }

  /** Holds the lease `leaseMs` longer; false when it is no longer this instance's. */
  async renew(name: string, now: Date, leaseMs: number): Promise<boolean> {
    const { affected } = await this.jobs.update(
      { name, leasedBy: this.instance },
      { leasedUntil: new Date(now.getTime() + leaseMs) },
    );
    return affected === 1;
  }

  /**
   * Ends this instance's run of `tick`: `done` marks the tick run, the others leave it for
   * another run. False when the lease was no longer this instance's.
   */
  async end(
    name: string,
    tick: Date,
    now: Date,
    outcome: RunOutcome,
  ): Promise<boolean> {
    const { affected } = await this.jobs.update(
      { name, leasedBy: this.instance },
      {
        leasedBy: null,
        leasedUntil: null,
        lastEndedAt: now,
        lastOutcome: outcome,
        ...(outcome === 'done' && { doneTick: tick }),
      },
    );
    return affected === 1;
  }

  /** Where the job stands, for an instance that could not take a tick. */
  state(
    name: string,
  ): Promise<Pick<ScheduledJob, 'doneTick' | 'leasedUntil'> | null> {
    return this.jobs.findOne({
      select: { doneTick: true, leasedUntil: true },
      where: { name },
    });
  }
}
