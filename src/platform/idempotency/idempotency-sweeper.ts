import { Inject, Logger } from '@nestjs/common';
import {
  Job,
  type JobRun,
  type JobSchedule,
  type PeriodicJob,
} from '../jobs/job.decorator';
import { IdempotencyStore } from './idempotency.store';
import {
  idempotencySettings,
  type IdempotencySettings,
} from './idempotency.settings';

/** Keys one statement deletes: short enough that no lock is held for long. */
export const SWEEP_BATCH = 1000;
/** Statements one run makes at most: a backlog is worked off over several runs. */
export const SWEEP_BATCHES_PER_RUN = 10;
/** How often expired keys are looked for, or every IDEMPOTENCY_TTL when that is shorter. */
export const SWEEP_INTERVAL_MS = 60_000;

/**
 * Deletes expired Idempotency-Keys in the background, on one instance at a time: at most
 * SWEEP_BATCHES_PER_RUN × SWEEP_BATCH per run, so a run never holds the database for long,
 * and runs back to back (BACKLOG_PAUSE_MS apart) while a backlog lasts, so that keys are
 * swept faster than any load creates them. Requests never wait for it: an expired key that is
 * still stored counts as free.
 */
@Job('idempotency.sweep')
export class IdempotencySweeper implements PeriodicJob {
  private readonly logger = new Logger(IdempotencySweeper.name);
  readonly schedule: JobSchedule;

  constructor(
    private readonly store: IdempotencyStore,
    @Inject(idempotencySettings.KEY) settings: IdempotencySettings,
  ) {
    this.schedule = {
      every: Math.min(SWEEP_INTERVAL_MS, settings.IDEMPOTENCY_TTL),
    };
  }

  async run(run: JobRun): Promise<boolean> {
    const { deleted, more } = await this.sweep(run.now(), run);
    if (deleted > 0) {
      this.logger.log(`deleted ${deleted} expired idempotency keys`);
    }
    return more;
  }

  /**
   * One run: the keys expired at `now`, a batch at a time; says how many went, and whether more
   * may be left (the run stopped at its bound with a full batch): the next run then comes
   * after BACKLOG_PAUSE_MS rather than a tick later.
   */
  async sweep(
    now: Date,
    run: Pick<JobRun, 'nextBatch'> = { nextBatch: () => Promise.resolve(true) },
  ): Promise<{ deleted: number; more: boolean }> {
    let deleted = 0;
    for (let batch = 1; ; batch += 1) {
      const count = await this.store.sweep(now, SWEEP_BATCH);
      deleted += count;
      if (count < SWEEP_BATCH) return { deleted, more: false };
      if (batch === SWEEP_BATCHES_PER_RUN || !(await run.nextBatch())) {
        return { deleted, more: true };
      }
    }
  }
}
