import type { Logger } from '@nestjs/common';
import { parseLosslessJson } from '../common/json/lossless-json';
import { STORED_TIME_SLACK_MS } from '../database/database-clock.service';
import {
  isDatabaseBusy,
  isDatabaseUnavailable,
} from '../database/database-errors';
import type { Metrics } from '../metrics/metrics';
import { PollingLoop } from '../jobs/polling-loop';
import type { HandledEvent, HandlesEvents } from './event-handler.decorator';
import type { HandlerRow, HandlerStore, LoggedEvent } from './handler-store';

/** How often an idle handler looks for new events. */
export const HANDLER_POLL_MS = 250;
/** Events one turn of a handler reads at most, each handled in a transaction of its own. */
export const HANDLER_BATCH = 100;
/** How long an instance holds a handler without renewing it before another may take over. */
export const HANDLER_LEASE_MS = 30_000;
/** The pause after a handler's first failure at an event, doubling up to HANDLER_MAX_RETRY_MS. */
export const HANDLER_RETRY_BASE_MS = 1000;
export const HANDLER_MAX_RETRY_MS = 300_000;
/**
 * Attempts at one event before a handler skips it, unless it says: with the 1 s doubling pause,
 * the last comes 63 s after the first failure.
 */
export const HANDLER_MAX_ATTEMPTS = 7;
/** Skipped events an operator asked to retry that one turn handles at most. */
export const RETRIES_PER_TURN = 10;

/** How a handler retries an event, and when it gives up on it. */
export interface HandlerRetry {
  /** Attempts at one event before it is skipped: kept aside, and the events after it handled. */
  attempts: number;
  /** The pause after the first failure, doubling up to HANDLER_MAX_RETRY_MS. */
  firstDelayMs: number;
}

export const DEFAULT_HANDLER_RETRY: HandlerRetry = {
  attempts: HANDLER_MAX_ATTEMPTS,
  firstDelayMs: HANDLER_RETRY_BASE_MS,
};
/** The longest an instance waits for a retry before it looks at the row again. */
const RETRY_LOOK_MS = HANDLER_POLL_MS * 8;
/**
 * A retry time further ahead than any instance could have set it came from a clock that was
 * ahead (docs/decisions.md, "Time that decides for others"), and holds nothing back.
 */
export const RETRY_AT_BOUND_MS = HANDLER_MAX_RETRY_MS + STORED_TIME_SLACK_MS;

/** Whether a retry time set after a failure still holds a handler back at `now`. */
export function retryPending(retryAt: Date | null, now: Date): boolean {
  if (retryAt === null) return false;
  const ahead = retryAt.getTime() - now.getTime();
  return ahead > 0 && ahead <= RETRY_AT_BOUND_MS;
}

/** The pause before the next attempt after `failures` failed attempts in a row. */
export function retryDelayMs(
  failures: number,
  firstDelayMs = HANDLER_RETRY_BASE_MS,
): number {
  return Math.min(
    HANDLER_MAX_RETRY_MS,
    firstDelayMs * 2 ** Math.min(Math.max(0, failures - 1), 30),
  );
}

/** How long after its first failure an event is skipped at the latest, polls aside. */
export function skippedWithinMs(retry: HandlerRetry): number {
  let total = 0;
  for (let failures = 1; failures < retry.attempts; failures += 1) {
    total += retryDelayMs(failures, retry.firstDelayMs);
  }
  return total;
}

/**
 * One handler on one instance (docs/decisions.md, "Reacting to events"): each turn reads the
 * events past its cursor, takes the lease, and handles them in order, each in a transaction
 * that also moves the cursor. An event that fails `retry.attempts` times is skipped: kept
 * aside for an operator (`events skipped`, `events retry`), and the events after it handled.
 * Its clock is the database's (DatabaseClockService), its timers the process's own: the simulation
 * fakes both.
 */
export class HandlerLoop {
  private readonly loop = new PollingLoop({
    turn: () => this.turn(),
    failed: (error) => {
      if (!isDatabaseUnavailable(error) && !isDatabaseBusy(error)) {
        this.logger.error(error, `event handler ${this.name} could not run`);
      }
      return HANDLER_RETRY_BASE_MS;
    },
  });

  constructor(
    readonly name: string,
    private readonly types: string[],
    private readonly handler: HandlesEvents,
    private readonly store: HandlerStore,
    private readonly instance: string,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
    /** The database's time (DatabaseClockService), in ms since the epoch. */
    private readonly now: () => number = Date.now,
    private readonly retry: HandlerRetry = DEFAULT_HANDLER_RETRY,
    /** While true, nothing is handled: the store is moving (StoreFenceService). */
    private readonly fenced: () => boolean = () => false,
  ) {}

  declare(): Promise<void> {
    return this.store.declare(this.name, this.types, new Date(this.now()));
  }

  start(): void {
    this.loop.start();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One turn: the events past its cursor, if any and if it may; says when to look again. */
  private async turn(): Promise<number> {
    if (this.fenced()) return HANDLER_POLL_MS;
    const head = await this.store.head();
    const row = await this.store.row(this.name);
    if (row === null) return HANDLER_POLL_MS;
    this.metrics.eventHandlerLag.set(
      { handler: this.name },
      Number(head > row.cursor ? head - row.cursor : 0n),
    );
    const now = new Date(this.now());
    if (retryPending(row.retryAt, now)) {
      return Math.min(row.retryAt!.getTime() - now.getTime(), RETRY_LOOK_MS);
    }
    if (row.cursor >= head && !row.retries) return HANDLER_POLL_MS;
    if (
      !(await this.store.claim(this.name, this.instance, now, HANDLER_LEASE_MS))
    ) {
      return HANDLER_POLL_MS;
    }
    try {
      // read again, held: the instance that held it until the claim may have moved the cursor
      // since the read above, and the events up to it are handled
      const held = await this.store.row(this.name);
      if (held === null) return HANDLER_POLL_MS;
      if (held.retries) await this.retrySkipped();
      if (held.cursor >= head) return HANDLER_POLL_MS;
      return await this.handleFrom(held, head);
    } finally {
      await this.store.release(this.name, this.instance).catch(() => undefined);
    }
  }

  /** Handles the events after its cursor up to `head`, in order; says when to look again. */
  private async handleFrom(row: HandlerRow, head: bigint): Promise<number> {
    const events = await this.store.eventsAfter(
      row.cursor,
      this.types,
      HANDLER_BATCH,
    );
    const due = events.filter(({ seq }) => seq <= head);
    let failures = row.failures;
    let renewAt = this.now() + HANDLER_LEASE_MS / 3;
    for (const event of due) {
      if (this.loop.signal.aborted) return 0;
      if (this.now() > renewAt) {
        await this.store.renew(
          this.name,
          this.instance,
          new Date(this.now() + HANDLER_LEASE_MS),
        );
        renewAt = this.now() + HANDLER_LEASE_MS / 3;
      }
      const failedFor = await this.handleOne(event, failures);
      if (failedFor !== undefined) return failedFor;
      failures = 0;
    }
    if (due.length === HANDLER_BATCH) return 0;
    await this.store.passTo(this.name, this.instance, head);
    return HANDLER_POLL_MS;
  }

  /** The skipped events an operator asked to retry, each once, in one transaction each. */
  private async retrySkipped(): Promise<void> {
    for (const event of await this.store.retriesOf(
      this.name,
      RETRIES_PER_TURN,
    )) {
      if (this.loop.signal.aborted) return;
      try {
        const handled = await this.store.handleSkipped(
          this.name,
          this.instance,
          event.seq,
          () => this.handler.handle(handledEventOf(event)),
        );
        if (!handled) return;
        this.metrics.eventHandlerRuns.inc({
          handler: this.name,
          outcome: 'handled',
        });
        this.logger.log(
          `event handler ${this.name} handled ${event.type} ${event.id} (its place in the log: ${event.seq}), skipped after ${event.attempts} attempts, on the retry asked for`,
        );
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        this.metrics.eventHandlerRuns.inc({
          handler: this.name,
          outcome: 'failed',
        });
        await this.store.retryFailed(
          this.name,
          event.seq,
          message.slice(0, 1000),
        );
        this.logger.error(
          error,
          `event handler ${this.name} failed again at ${event.type} ${event.id} (its place in the log: ${event.seq}) on the retry asked for; it stays skipped`,
        );
      }
    }
  }

  /** One event, and the cursor past it, in one transaction; on a failure, when to look again. */
  private async handleOne(
    event: LoggedEvent,
    failures: number,
  ): Promise<number | undefined> {
    const handled = handledEventOf(event);
    try {
      const held = await this.store.handleOne(
        this.name,
        this.instance,
        event.seq,
        () => this.handler.handle(handled),
      );
      // another instance has taken the handler over: it handles this event
      if (!held) return HANDLER_POLL_MS;
      this.metrics.eventHandlerRuns.inc({
        handler: this.name,
        outcome: 'handled',
      });
      return undefined;
    } catch (error) {
      const attempt = failures + 1;
      const delay = retryDelayMs(attempt, this.retry.firstDelayMs);
      const message = error instanceof Error ? error.message : String(error);
      this.metrics.eventHandlerRuns.inc({
        handler: this.name,
        outcome: 'failed',
      });
      const unavailable = isDatabaseUnavailable(error) || isDatabaseBusy(error);
      if (attempt >= this.retry.attempts && !unavailable) {
        return this.skip(event, attempt, error, message);
      }
      await this.store.failed(
        this.name,
        this.instance,
        attempt,
        new Date(this.now() + delay),
        message.slice(0, 1000),
      );
      if (!unavailable) {
        this.logger.error(
          error,
          `event handler ${this.name} failed at ${handled.type} ${handled.id} (its place in the log: ${handled.seq}), attempt ${attempt} of ${this.retry.attempts}; the events after it wait, and it is tried again in ${Math.round(delay / 1000)} s`,
        );
      }
      return delay;
    }
  }

  /** Gives up on an event after its last attempt; says when to look again (at once). */
  private async skip(
    event: LoggedEvent,
    attempts: number,
    error: unknown,
    message: string,
  ): Promise<number> {
    const skipped = await this.store.skip(
      this.name,
      this.instance,
      event,
      attempts,
      message.slice(0, 1000),
      new Date(this.now()),
    );
    if (!skipped) return HANDLER_POLL_MS;
    this.metrics.eventHandlerRuns.inc({
      handler: this.name,
      outcome: 'skipped',
    });
    this.logger.error(
      error,
      `event handler ${this.name} gave up on ${event.type} ${event.id} (its place in the log: ${event.seq}) after ${attempts} attempts, and goes on with the events after it; the event is kept: \`events skipped\` lists it, \`events retry ${this.name} ${event.seq}\` tries it again (docs/operations.md, "Skipped events")`,
    );
    return 0;
  }
}

/** An event of the log as a handler is handed it, its payload parsed. */
function handledEventOf(event: LoggedEvent): HandledEvent {
  return {
    id: event.id,
    type: event.type,
    seq: event.seq,
    createdAt: event.createdAt,
    payload: parseLosslessJson(event.payload),
  };
}
