import {
  DatabaseBusyError,
  DatabaseUnreachableError,
  isDatabaseUnavailable,
} from './database-errors';
import type { CallbackPool } from './callback-pool';

interface Waiter {
  /** By when its caller needs the connection: the line is in this order. */
  deadline: number;
  grant: () => void;
  refuse: (error: Error) => void;
  timer: NodeJS.Timeout;
}

/** What the queue is bounded by: DB_QUEUE_LIMIT and DB_BUSY_TIMEOUT. */
export interface QueueBounds {
  /** Waiters at most; one more is refused at once. */
  limit: number;
  /** The longest one waits, unless its caller gives an earlier deadline. */
  timeoutMs: number;
}

/**
 * The line in front of PostgreSQL's pool: as many permits as the pool has connections, and
 * waiters served by their deadline, earliest first, each for a bounded time. A new caller's
 * deadline is DB_BUSY_TIMEOUT from its arrival, so callers are served first come, first
 * served; a transaction run again after a conflict keeps the deadline of its first attempt,
 * and so its place in the line, ahead of the requests that came after it. pg-pool's own queue has
 * no bound on its length, and its wait shares one timeout with opening a connection, so a
 * request that waited its turn too long was told the database was unreachable. Here a wait
 * that runs out, or a line already full, is a DatabaseBusyError (503 busy, nothing changed):
 * no statement of the caller ran.
 */
export class ConnectionQueue {
  private free: number;
  private readonly waiters: Waiter[] = [];

  constructor(
    permits: number,
    private readonly bounds: QueueBounds,
  ) {
    this.free = permits;
  }

  /** Callers waiting for a connection now: the depth of the line. */
  get waiting(): number {
    return this.waiters.length;
  }

  /**
   * Resolves once the caller may take a connection, which it gives back with `release()`;
   * rejects with DatabaseBusyError when the line is full, or once `deadline` (a time in ms,
   * at most `timeoutMs` from now) passes first.
   */
  acquire(deadline = Date.now() + this.bounds.timeoutMs): Promise<void> {
    if (this.free > 0) {
      this.free -= 1;
      return Promise.resolve();
    }
    if (this.waiters.length >= this.bounds.limit) {
      return Promise.reject(
        new DatabaseBusyError(
          `${this.bounds.limit} requests were already waiting for a database connection`,
        ),
      );
    }
    const until = Math.min(deadline, Date.now() + this.bounds.timeoutMs);
    const waitMs = Math.max(0, until - Date.now());
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        deadline: until,
        grant: resolve,
        refuse: reject,
        timer: setTimeout(() => {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          reject(
            new DatabaseBusyError(
              `no database connection came free within ${waitMs} ms`,
            ),
          );
        }, waitMs),
      };
      const behind = this.waiters.findIndex((other) => other.deadline > until);
      this.waiters.splice(
        behind === -1 ? this.waiters.length : behind,
        0,
        waiter,
      );
    });
  }

  /** Ends every wait now with `error`: no connection is coming for anyone. */
  refuseWaiting(error: Error): void {
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.refuse(error);
    }
  }

  /** Gives a connection back: to the first waiter, if there is one. */
  release(): void {
    const next = this.waiters.shift();
    if (next === undefined) {
      this.free += 1;
      return;
    }
    clearTimeout(next.timer);
    next.grant();
  }
}

/**
 * Makes every connection taken from `pool` wait its turn in `queue` first, and give its
 * permit back when it is released (once, however often release is called). `deadline` says
 * by when the caller needs it. A connection that cannot be opened because the server is away
 * ends the wait of everyone behind it too, at once: none of them would get one either. Both
 * fail as DatabaseUnreachableError: their work never reached the database.
 */
export function queueConnections(
  pool: CallbackPool,
  queue: ConnectionQueue,
  deadline: () => number | undefined,
): void {
  const connect = pool.connect.bind(pool);
  pool.connect = (callback) => {
    queue.acquire(deadline()).then(
      () =>
        connect((error, client, release) => {
          if (error) {
            if (!isDatabaseUnavailable(error)) {
              queue.release();
              callback(error, client, release);
              return;
            }
            const unreachable = new DatabaseUnreachableError(error.message, {
              cause: error,
            });
            // first, so that the permit given back goes to none of them
            queue.refuseWaiting(unreachable);
            queue.release();
            callback(unreachable, client, release);
            return;
          }
          let released = false;
          callback(undefined, client, (releaseError?: unknown) => {
            if (!released) {
              released = true;
              queue.release();
            }
            release(releaseError);
          });
        }),
      (error: Error) => callback(error, undefined, () => undefined),
    );
  };
}
