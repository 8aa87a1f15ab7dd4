import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { appConfig, type AppConfig } from '../config/app.config';
import {
  isDatabaseBusy,
  isDatabaseUnavailable,
} from '../database/database-errors';
import { IdempotencyStore } from './idempotency.store';

/** Keys one statement deletes: short enough that no lock is held for long. */
export const SWEEP_BATCH = 1000;
/** Statements one run makes at most: a backlog is worked off over several runs. */
export const SWEEP_BATCHES_PER_RUN = 10;
/** Between two statements, so that requests get the database in between (SQLite's one connection). */
const BATCH_PAUSE_MS = 20;
/** How often expired keys are looked for, or every IDEMPOTENCY_TTL when that is shorter. */
export const SWEEP_INTERVAL_MS = 60_000;

/**
 * Deletes expired Idempotency-Keys in the background, on every instance: at most
 * SWEEP_BATCHES_PER_RUN × SWEEP_BATCH per run, so a run never holds the database for long.
 * Requests never wait for it: an expired key that is still stored counts as free.
 */
@Injectable()
export class IdempotencySweeper
  implements OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly logger = new Logger(IdempotencySweeper.name);
  private readonly shutdown = new AbortController();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly store: IdempotencyStore,
    @Inject(appConfig.KEY) private readonly config: AppConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.schedule();
  }

  beforeApplicationShutdown(): void {
    clearTimeout(this.timer);
    this.shutdown.abort();
  }

  private schedule(): void {
    const interval = Math.min(SWEEP_INTERVAL_MS, this.config.idempotency.ttlMs);
    this.timer = setTimeout(() => {
      void this.run().finally(() => {
        if (!this.shutdown.signal.aborted) this.schedule();
      });
    }, interval);
    this.timer.unref();
  }

  private async run(): Promise<void> {
    try {
      const deleted = await this.sweep(new Date());
      if (deleted > 0)
        this.logger.log(`deleted ${deleted} expired idempotency keys`);
    } catch (error) {
      // the next run deletes what this one could not
      if (
        this.shutdown.signal.aborted ||
        isDatabaseUnavailable(error) ||
        isDatabaseBusy(error)
      ) {
        return;
      }
      this.logger.error(error, 'expired idempotency keys could not be deleted');
    }
  }

  /** One run: the keys expired at `now`, a batch at a time; says how many went. */
  async sweep(now: Date): Promise<number> {
    let deleted = 0;
    for (let batch = 1; batch <= SWEEP_BATCHES_PER_RUN; batch += 1) {
      const count = await this.store.sweep(now, SWEEP_BATCH);
      deleted += count;
      if (count < SWEEP_BATCH || this.shutdown.signal.aborted) break;
      await sleep(BATCH_PAUSE_MS);
    }
    return deleted;
  }
}
