/** Where a handler stands, as its row says. */
export interface HandlerRow {
  cursor: bigint;
  /** Failed attempts in a row at the event after the cursor. */
  failures: number;
  retryAt: Date | null;
  /** Whether an operator asked for a skipped event to be tried again (`events retry`). */
  retries: boolean;
}

/** An event of the log as a handler reads it, its payload still JSON. */
export interface LoggedEvent {
  id: string;
  type: string;
  seq: bigint;
  createdAt: Date;
  payload: string;
}

/**
 * What a handler's loop needs of the database, each call atomic: the SQL store
 * (event-handlers.service.ts) and an in-memory one that the simulation runs the same loop against
 * (handler-loop.spec.ts). Every write but `declare` holds only while `instance` holds the lease.
 */
export interface HandlerStore {
  /** Its row, made at the log's head if it has none, its types kept current, seen at `now`. */
  declare(name: string, types: string[], now: Date): Promise<void>;
  /** The place in the log of the newest event. */
  head(): Promise<bigint>;
  row(name: string): Promise<HandlerRow | null>;
  /**
   * Takes the lease until `now + leaseMs` when it is free, run out or already the instance's
   * own, and no retry is pending (`retryPending`); says whether it did. A lease end further
   * than STORED_TIME_SLACK_MS past a lease from `now` holds nothing.
   */
  claim(
    name: string,
    instance: string,
    now: Date,
    leaseMs: number,
  ): Promise<boolean>;
  renew(name: string, instance: string, until: Date): Promise<void>;
  release(name: string, instance: string): Promise<void>;
  /** Events of `types` past `cursor`, oldest first, `limit` at most. */
  eventsAfter(
    cursor: bigint,
    types: readonly string[],
    limit: number,
  ): Promise<LoggedEvent[]>;
  /**
   * Runs `handle`, then moves the cursor to `seq` and clears the failures, in one transaction;
   * false, everything rolled back, when the instance no longer holds the lease or the cursor is
   * already at `seq` or past it (the event was handled). A throw of `handle` rolls back and is
   * thrown.
   */
  handleOne(
    name: string,
    instance: string,
    seq: bigint,
    handle: () => Promise<void>,
  ): Promise<boolean>;
  /** An attempt failed: its count in a row, and when to try again. */
  failed(
    name: string,
    instance: string,
    failures: number,
    retryAt: Date,
    error: string,
  ): Promise<void>;
  /** The cursor up to `head`, past the events of other types, if it is behind it. */
  passTo(name: string, instance: string, head: bigint): Promise<void>;
  /**
   * Gives up on `event` after `attempts` failed ones: keeps it among the skipped events and
   * moves the cursor past it, in one transaction; false when the instance no longer holds the
   * lease or the cursor is already past it.
   */
  skip(
    name: string,
    instance: string,
    event: LoggedEvent,
    attempts: number,
    error: string,
    now: Date,
  ): Promise<boolean>;
  /** The skipped events an operator asked to retry, oldest first, `limit` at most. */
  retriesOf(name: string, limit: number): Promise<SkippedAttempt[]>;
  /**
   * Runs `handle` for a skipped event and drops it from the skipped ones, in one transaction;
   * false, rolled back, when the instance no longer holds the lease or the retry was handled.
   */
  handleSkipped(
    name: string,
    instance: string,
    seq: bigint,
    handle: () => Promise<void>,
  ): Promise<boolean>;
  /** A requested retry failed: the event stays skipped, one attempt more, no retry asked. */
  retryFailed(name: string, seq: bigint, error: string): Promise<void>;
}

/** A skipped event with the attempts it has had. */
export interface SkippedAttempt extends LoggedEvent {
  attempts: number;
}
