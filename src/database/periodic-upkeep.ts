import type { Logger } from '@nestjs/common';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDatabaseBusy, isDatabaseUnavailable } from './database-errors';

/** Between two batches of a run, so that requests get the database in between (SQLite's one connection). */
const BATCH_PAUSE_MS = 20;

/**
 * Database upkeep an instance does on a timer of its own (retention, expired idempotency
 * keys): `run` every `intervalMs`, timed from the end of the last run so that runs never
 * overlap, on a timer that keeps no process alive, until `stop()`. A run that finds the
 * database away or busy leaves its work to the next one, quietly; any other failure is logged
 * as `failure`. Every instance may run it: the work must be safe to do twice.
 */
export class PeriodicUpkeep {
  private readonly stopping = new AbortController();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly options: {
      intervalMs: number;
      run: () => Promise<void>;
      logger: Logger;
      failure: string;
    },
  ) {}

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /**
   * Between two batches of a run: a pause, so that requests get the database; false once
   * `stop()` was called, when the run ends after the batch it was in.
   */
  async nextBatch(): Promise<boolean> {
    if (this.stopped) return false;
    await sleep(BATCH_PAUSE_MS);
    return !this.stopped;
  }

  start(): void {
    this.timer = setTimeout(() => {
      void this.runOnce().finally(() => {
        if (!this.stopped) this.start();
      });
    }, this.options.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.stopping.abort();
  }

  private async runOnce(): Promise<void> {
    try {
      await this.options.run();
    } catch (error) {
      if (
        this.stopped ||
        isDatabaseUnavailable(error) ||
        isDatabaseBusy(error)
      ) {
        return;
      }
      this.options.logger.error(error, this.options.failure);
    }
  }
}
