import { DatabaseBusyError } from './database-errors';

interface Waiter {
  holder: object | undefined;
  resume: () => void;
  refuse: (error: Error) => void;
  /** When it stops waiting (Date.now()): waiters come in order, so the first's is the earliest. */
  deadline: number;
}

/**
 * Makes SQLite's one connection something a transaction can own. TypeORM gives every request
 * the same connection, so a transaction left open across an `await` would otherwise take in
 * the statements of every other request meanwhile, and its rollback would erase their
 * acknowledged writes. The gate is a readers-writer lock over that connection: single
 * statements share it, a transaction holds it alone.
 *
 * - A statement runs at once while no transaction holds the connection or waits for it. It
 *   counts as in flight until it ends, because TypeORM awaits before it reaches the driver.
 * - A transaction's holder gets the connection once no statement is in flight and no other
 *   holder has it. Whoever comes after it, statement or transaction, waits its turn: first
 *   come, first served, so neither kind starves the other.
 * - The holder's own statements do not come through `statement`: the data source tells them
 *   apart (sqlite-connection.ts) and runs them directly.
 * - No wait is endless: one that lasts `timeoutMs` (DB_BUSY_TIMEOUT) ends in DatabaseBusyError
 *   (503 busy, nothing changed), whatever holds the connection. One timer serves the line: its
 *   first waiter's deadline is the earliest.
 */
export class ConnectionGate {
  private inFlight = 0;
  private current: object | undefined;
  private readonly queue: Waiter[] = [];
  private timer?: NodeJS.Timeout;

  constructor(private readonly timeoutMs = Infinity) {}

  /** Whether a statement would wait: what the hot path checks before anything else. */
  get busy(): boolean {
    return this.current !== undefined || this.queue.length > 0;
  }

  /** Statements and transactions waiting for the connection. */
  get waiting(): number {
    return this.queue.length;
  }

  /** The transaction's owner that holds the connection, if any. */
  get holder(): object | undefined {
    return this.current;
  }

  /** Runs one statement (or anything atomic on its own) outside every transaction. */
  statement<T>(run: () => Promise<T>): Promise<T> {
    if (this.busy) return this.wait(undefined).then(() => this.ended(run));
    this.inFlight += 1;
    // not an async function: every statement of the service passes here, and the await of
    // one costs a promise and a turn of the microtask queue more
    return this.ended(run);
  }

  /** `run`, counted in flight until it settles, however it settles. */
  private ended<T>(run: () => Promise<T>): Promise<T> {
    const done = () => {
      this.inFlight -= 1;
      this.admit();
    };
    let running: Promise<T>;
    try {
      running = run();
    } catch (error) {
      done();
      // what run threw, passed on as it is
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
      return Promise.reject(error);
    }
    return running.then(
      (result) => {
        done();
        return result;
      },
      (error: unknown) => {
        done();
        throw error;
      },
    );
  }

  /** Resolves once `holder` has the connection alone; `release(holder)` gives it back. */
  async acquire(holder: object): Promise<void> {
    if (this.busy || this.inFlight > 0) await this.wait(holder);
    else this.current = holder;
  }

  release(holder: object): void {
    if (this.current !== holder) return;
    this.current = undefined;
    this.admit();
  }

  private wait(holder: object | undefined): Promise<void> {
    return new Promise((resume, refuse) => {
      this.queue.push({
        holder,
        resume,
        refuse,
        deadline: Date.now() + this.timeoutMs,
      });
      if (this.timer === undefined) this.watchDeadlines();
    });
  }

  /** A timer for the first waiter's deadline; the waiters past theirs, refused. */
  private watchDeadlines(): void {
    this.timer = undefined;
    const now = Date.now();
    while (this.queue.length > 0 && this.queue[0].deadline <= now) {
      this.queue
        .shift()!
        .refuse(
          new DatabaseBusyError(
            `SQLite's connection did not come free within ${this.timeoutMs} ms`,
          ),
        );
    }
    // a transaction refused at the head may have held back statements that can go now
    this.admit();
    const first = this.queue[0];
    if (first === undefined || !Number.isFinite(first.deadline)) return;
    this.timer = setTimeout(() => this.watchDeadlines(), first.deadline - now);
    // a waiting request keeps the process alive by its connection, not by this timer
    this.timer.unref();
  }

  /** Lets in, in order, every statement up to the next transaction, then that transaction. */
  private admit(): void {
    while (this.queue.length > 0 && this.current === undefined) {
      const next = this.queue[0];
      if (next.holder !== undefined) {
        if (this.inFlight > 0) return;
        this.current = next.holder;
      } else {
        this.inFlight += 1;
      }
      this.queue.shift();
      next.resume();
    }
  }
}
