import type { Logger } from '@nestjs/common';
import {
  isDatabaseBusy,
  isDatabaseUnavailable,
} from '../database/database-errors';
import type { Metrics } from '../metrics/metrics';
import type { JobRun, PeriodicJob } from './job.decorator';
import type { JobLeases, RunOutcome } from './job-leases';
import type { Ticks } from './job-schedule';
import { PollingLoop } from './polling-loop';

/** Between two batches of a run, so that requests get the database in between (SQLite's one connection). */
export const BATCH_PAUSE_MS = 20;

/**
 * Between a run that left work behind and the next run of its tick: a backlog is worked off
 * at once, rather than a tick later, which the work coming in could outpace.
 */
export const BACKLOG_PAUSE_MS = 1000;

/** Between a run that failed, or found the database away, and the next try of its tick. */
export const FAILURE_PAUSE_MS = 10_000;

/** The longest timer: a tick further away (a yearly cron) is looked at again after this. */
const LONGEST_WAIT_MS = 3_600_000;

/** What a loop needs of the `scheduled_jobs` rows. */
export type Leases = Pick<JobLeases, 'claim' | 'renew' | 'end' | 'state'>;

/** One job on one instance: its loop, which takes each tick nobody ran, and runs it. */
export class JobLoop {
  private readonly loop = new PollingLoop({
    turn: () => this.wake(),
    failed: () => FAILURE_PAUSE_MS,
  });

  constructor(
    readonly name: string,
    readonly declaredBy: string,
    private readonly job: PeriodicJob,
    private readonly ticks: Ticks,
    private readonly leases: Leases,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    /** The database's time (DatabaseClockService), in ms since the epoch. */
    private readonly now: () => number = Date.now,
    /** While true, no tick is taken: the store is moving (StoreFenceService). */
    private readonly fenced: () => boolean = () => false,
  ) {}

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Takes the latest tick if nobody ran it, runs it, and says how long to wait for the next. */
  private async wake(): Promise<number> {
    const at = await this.nextWake();
    return Math.min(at - this.now(), LONGEST_WAIT_MS);
  }

  /** Takes the latest tick if nobody ran it, runs it, and says when to wake next. */
  private async nextWake(): Promise<number> {
    const now = this.now();
    if (this.fenced()) return now + FAILURE_PAUSE_MS;
    const tick = this.ticks.latest(now);
    if (tick === undefined)
      return this.ticks.after(now) ?? now + LONGEST_WAIT_MS;
    let claimed: boolean;
    try {
      claimed = await this.leases.claim(
        this.name,
        new Date(tick),
        new Date(now),
        this.ticks.leaseMs,
      );
    } catch (error) {
      this.failed(error, 'could not take its tick');
      return now + FAILURE_PAUSE_MS;
    }
    if (!claimed) return this.afterOthers(tick);
    const outcome = await this.run(tick);
    if (outcome === 'backlog') return this.now() + BACKLOG_PAUSE_MS;
    const next = this.nextTick(tick);
    return outcome === 'failed'
      ? Math.min(next, this.now() + FAILURE_PAUSE_MS)
      : next;
  }

  /**
   * When to look again at a tick another instance took or ran: at the next tick, or, while
   * that instance runs it, when its lease would run out, in case it died.
   */
  private async afterOthers(tick: number): Promise<number> {
    const state = await this.leases.state(this.name);
    const next = this.nextTick(tick);
    const done = (state?.doneTick?.getTime() ?? -Infinity) >= tick;
    const leaseEnd = state?.leasedUntil?.getTime();
    return done || leaseEnd === undefined ? next : Math.min(next, leaseEnd + 1);
  }

  private nextTick(tick: number): number {
    return this.ticks.after(tick) ?? tick + LONGEST_WAIT_MS;
  }

  private async run(tick: number): Promise<RunOutcome> {
    const ended = new AbortController();
    const signal = AbortSignal.any([this.loop.signal, ended.signal]);
    let lost = false;
    const renewal = setInterval(() => {
      this.leases
        .renew(this.name, new Date(this.now()), this.ticks.leaseMs)
        .then((held) => {
          if (!held && !signal.aborted) {
            lost = true;
            ended.abort();
          }
        })
        // a renewal that fails is tried again a third of a lease later
        .catch(() => undefined);
    }, this.ticks.leaseMs / 3);
    renewal.unref();
    const run: JobRun = {
      tick: new Date(tick),
      signal,
      now: () => new Date(this.now()),
      nextBatch: async () => {
        if (signal.aborted) return false;
        await new Promise((resolve) => setTimeout(resolve, BATCH_PAUSE_MS));
        return !signal.aborted;
      },
    };
    const started = performance.now();
    let outcome: RunOutcome;
    try {
      outcome = (await this.job.run(run)) === true ? 'backlog' : 'done';
    } catch (error) {
      outcome = 'failed';
      if (!this.loop.signal.aborted) this.failed(error, 'failed');
    } finally {
      clearInterval(renewal);
    }
    const seconds = (performance.now() - started) / 1000;
    this.metrics.jobRuns.inc({ job: this.name, outcome });
    this.metrics.jobRunDuration.observe({ job: this.name }, seconds);
    const kept = await this.leases
      .end(this.name, new Date(tick), new Date(this.now()), outcome)
      .catch(() => false);
    const tickTime = new Date(tick).toISOString();
    if (lost || !kept) {
      this.logger.warn(
        `job ${this.name}: its run of the tick at ${tickTime} held its lease past ${this.ticks.leaseMs} ms without renewing it, and another instance may have run the tick again; a run must end or call nextBatch() well within its lease`,
      );
    } else {
      this.logger.debug(
        `job ${this.name} ran the tick at ${tickTime} (${this.ticks.text}) in ${Math.round(seconds * 1000)} ms: ${outcome}`,
      );
    }
    return outcome;
  }

  /** A failure is logged, unless the database is away or busy: the next try comes anyway. */
  private failed(error: unknown, what: string): void {
    if (isDatabaseUnavailable(error) || isDatabaseBusy(error)) return;
    this.logger.error(error, `job ${this.name} ${what}`);
  }
}
