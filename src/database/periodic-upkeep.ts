import type { Logger } from '@nestjs/common';
import { isDatabaseBusy, isDatabaseUnavailable } from './database-errors';

/** Between two batches of a run, so that requests get the database in between (SQLite's one connection). */
const BATCH_PAUSE_MS = 20;

/**
 * Between a run that left work behind (it stopped at its bound of batches) and the next: a
 * backlog is worked off at once, rather than a run an interval, which the work coming in could
 * outpace (18,000 new idempotency keys a minute against 10,000 swept).
 */
export const BACKLOG_PAUSE_MS = 1000;

/**
 * Database upkeep an instance does on a timer of its own (retention, expired idempotency
 * keys): `run` every `intervalMs`, timed from the end of the last run so that runs never
 * overlap, on a timer that keeps no process alive, until `stop()`; a run that resolves `true`
 * left work behind, and the next comes after BACKLOG_PAUSE_MS. A run that finds the database
 * away or busy leaves its work to the next one, quietly; any other failure is logged as
 * `failure`. Every instance may run it: the work must be safe to do twice.
 */
export class PeriodicUpkeep {
  private readonly stopping = new AbortController();
  private timer?: NodeJS.Timeout;

  constructor(
    private readonly options: {
      intervalMs: number;
      /** Resolves `true` when it left work behind. */
      run: () => Promise<boolean | void>;
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
    await new Promise((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));
    return !this.stopped;
  }

  start(delayMs = this.options.intervalMs): void {
    this.timer = setTimeout(() => {
      void this.runOnce().then((backlog) => {
        if (!this.stopped) {
          this.start(backlog ? BACKLOG_PAUSE_MS : this.options.intervalMs);
        }
      });
    }, delayMs);
    this.timer.unref();
  }

  stop(): void {
    clearTimeout(this.timer);
    this.stopping.abort();
  }

  /** Whether the run left work behind. */
  private async runOnce(): Promise<boolean> {
    try {
      return (await this.options.run()) === true;
    } catch (error) {
      if (
        !this.stopped &&
        !isDatabaseUnavailable(error) &&
        !isDatabaseBusy(error)
      ) {
        this.options.logger.error(error, this.options.failure);
      }
      return false;
    }
  }
}
