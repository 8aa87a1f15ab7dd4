import type { DataSource, QueryRunner } from 'typeorm';
import { ConnectionQueue, type QueueBounds } from './connection-queue';
import {
  isDivisionByZero,
  isLockNotGranted,
  isTransactionConflict,
} from './database-errors';
import {
  activeTransaction,
  ClosingUpdateChangedNothing,
  type ActiveTransaction,
  type ClosingUpdate,
  type IsolationLevel,
  type Work,
} from './transaction-context';

/**
 * How long a statement of a SERIALIZABLE or REPEATABLE READ transaction waits for a row lock
 * on PostgreSQL before it fails (55P03) and the transaction runs again. Waiting cannot help
 * there: when the holder commits, the waiter fails with a serialization failure anyway; and
 * two transactions that lock two rows in opposite orders would wait for PostgreSQL's deadlock
 * check, a second (deadlock_timeout) into the wait. At READ COMMITTED, where a lock is taken
 * to be waited for (`@LockingTransaction()`), the server's own setting holds.
 */
export const SERIALIZABLE_LOCK_WAIT_MS = 10;

/** Whether a transaction at `level` bounds its row-lock waits (as above). */
function boundsLockWaits(level: IsolationLevel): boolean {
  return level === 'SERIALIZABLE' || level === 'REPEATABLE READ';
}

const BOUNDED_LOCK_WAIT = `SET LOCAL lock_timeout = ${SERIALIZABLE_LOCK_WAIT_MS}`;

/**
 * The pause before a conflicted transaction runs again, at random up to this: the transaction
 * it met has a moment to commit. Short, because the line of conflicted transactions (below)
 * already keeps them from colliding with each other: a longer pause only let requests that
 * came later take the rows first (p99 5.4 s for 70 contended transfers, against 1.4 s).
 */
const RETRY_JITTER_MS = 5;

/** The data source a TransactionRunner opens its transactions on. */
export interface TransactionSource extends DataSource {
  /** Tells those who wait for evidence that the database takes writes. */
  writeCommitted(): void;
}

/**
 * Runs one transaction from BEGIN to COMMIT on its own connection, and again after a
 * serialization failure or a deadlock on PostgreSQL, within the contention bound
 * (PortableDataSource.transaction says what callers get).
 */
export class TransactionRunner {
  /**
   * This instance's transactions that conflicted, run again one at a time, the oldest first
   * (by deadline: a transaction keeps the one of its first attempt).
   */
  private readonly retryLine: ConnectionQueue;

  constructor(
    private readonly dataSource: TransactionSource,
    private readonly bounds: QueueBounds,
  ) {
    this.retryLine = new ConnectionQueue(1, {
      ...bounds,
      limit: Number.MAX_SAFE_INTEGER,
    });
  }

  private get postgres(): boolean {
    return this.dataSource.options.type === 'postgres';
  }

  /**
   * `work` in a transaction at `level`, run again on conflicts. With `adopting`, the
   * transaction takes the level of the first transaction that joins it (`adopt`).
   */
  async run<T>(
    level: IsolationLevel,
    work: Work<T>,
    adopting: boolean,
  ): Promise<T> {
    const deadline = Date.now() + this.bounds.timeoutMs;
    let inLine = false;
    try {
      for (;;) {
        try {
          return await this.attempt(level, deadline, work, adopting);
        } catch (error) {
          if (!isTransactionConflict(error) && !isLockNotGranted(error)) {
            throw error;
          }
          // run again from the line of this instance's conflicted transactions, one at a time
          // in the order they began: the first of them keeps trying until it commits
          if (!inLine) {
            // past the bound, the conflict is the answer (busy), as below
            await this.retryLine.acquire(deadline).catch(() => {
              throw error;
            });
            inLine = true;
          }
          const delay = Math.random() * RETRY_JITTER_MS;
          if (Date.now() + delay >= deadline) throw error;
          await new Promise((resolve) => setTimeout(resolve, delay));
          // a timer can fire late on a loaded machine: no attempt starts past the bound
          if (Date.now() >= deadline) throw error;
        }
      }
    } finally {
      if (inLine) this.retryLine.release();
    }
  }

  /** The isolation level of the transaction `active` becomes `level`, before its first statement. */
  async adopt(active: ActiveTransaction, level: IsolationLevel): Promise<void> {
    const adopting = active.adopting!;
    if (adopting.statementRan) {
      throw new Error(
        `a ${level} transaction joined a transaction opened at ${active.isolation} after statements ran in it, too late to change its level: declare the level on the route (@Idempotent({ isolation: '${level}' })), or run no statement before calling the method that opens the ${level} transaction (docs/conventions.md, "Business rules")`,
      );
    }
    await adopting.setLevel(level);
    active.isolation = level;
    active.adopting = undefined;
  }

  private async attempt<T>(
    isolation: IsolationLevel,
    deadline: number,
    work: Work<T>,
    adopting: boolean,
  ): Promise<T> {
    const owner = this.dataSource.createQueryRunner();
    // on SQLite a transaction's joiners get its session, the one connection's holder
    const joined = this.postgres
      ? (Object.create(owner, {
          release: { value: () => Promise.resolve() },
        }) as QueryRunner)
      : owner;
    const active: ActiveTransaction = {
      dataSource: this.dataSource,
      joined,
      deadline,
      isolation,
    };
    try {
      return await activeTransaction.run(active, async () => {
        const { begun } = await this.begin(owner, isolation);
        if (adopting) this.watchFirstStatement(owner, active);
        try {
          const result = await work(owner.manager);
          await begun;
          await this.commit(owner, active.closing);
          this.dataSource.writeCommitted();
          return result;
        } catch (error) {
          if (owner.isTransactionActive) {
            await owner.rollbackTransaction().catch(() => undefined);
          }
          throw error;
        }
      });
    } finally {
      await owner.release();
    }
  }

  /**
   * Begins `owner`'s transaction. Resolves once it has begun on SQLite, and once BEGIN is sent
   * on PostgreSQL, with `begun`, the promise of the server's answer (in an object: an async
   * function's promise takes on a promise it returns, and would wait for the answer).
   *
   * On PostgreSQL, BEGIN is one statement where TypeORM sends two (START TRANSACTION, then SET
   * TRANSACTION ISOLATION LEVEL), with the level's bound on row-lock waits (boundsLockWaits),
   * and nothing waits for its answer: the connection is pipelined (data-source-options.ts), so
   * the transaction's first statement goes out behind it and the two take one round trip.
   * BEGIN fails only with its connection, and then the statements behind it fail too. SQLite's
   * own level is serializable, and TypeORM refuses it any other.
   */
  private async begin(
    owner: QueryRunner,
    isolation: IsolationLevel,
  ): Promise<{ begun: Promise<unknown> }> {
    if (!this.postgres) {
      await owner.startTransaction();
      return { begun: Promise.resolve() };
    }
    // the connection first: BEGIN is then the first statement its client is given
    await owner.connect();
    const query = owner.query.bind(owner);
    let begun: Promise<unknown> = Promise.resolve();
    owner.query = ((sql: string) => {
      if (sql === 'START TRANSACTION') {
        begun = query(
          `START TRANSACTION ISOLATION LEVEL ${isolation}${boundsLockWaits(isolation) ? `; ${BOUNDED_LOCK_WAIT}` : ''}`,
        );
        // awaited by the caller, before COMMIT; a failure is also the next statement's
        begun.catch(() => undefined);
      }
      return Promise.resolve();
    }) as QueryRunner['query'];
    try {
      await owner.startTransaction(isolation);
    } finally {
      owner.query = query;
    }
    return { begun };
  }

  /**
   * Commits `owner`'s transaction, if its `closing` UPDATE (closeWith) changes a row. On
   * PostgreSQL the UPDATE becomes a statement that fails when it changed none, and COMMIT is
   * written behind it without waiting, so the two take one round trip: a failed statement
   * aborts the transaction, and the server answers the COMMIT after it by rolling back. The
   * UPDATE reaches the client first: both go through `owner.query`, and COMMIT starts later,
   * behind one more await (TypeORM's commit event).
   */
  private async commit(
    owner: QueryRunner,
    closing: ClosingUpdate | undefined,
  ): Promise<void> {
    if (closing === undefined) return owner.commitTransaction();
    if (!this.postgres) {
      const { affected } = await owner.query(
        closing.sql,
        closing.parameters,
        true,
      );
      if (!affected) throw new ClosingUpdateChangedNothing();
      return owner.commitTransaction();
    }
    const closed = owner.query(
      `WITH "closing" AS (${closing.sql} RETURNING 1) SELECT 1 / count(*)::int AS "closed" FROM "closing"`,
      closing.parameters,
      true,
    );
    const committed = owner.commitTransaction();
    const [update, commit] = await Promise.allSettled([closed, committed]);
    if (update.status === 'rejected') {
      throw isDivisionByZero(update.reason)
        ? new ClosingUpdateChangedNothing()
        : update.reason;
    }
    if (commit.status === 'rejected') throw commit.reason;
  }

  /**
   * Marks `active` once a statement runs on `owner`, and gives it the way to change its level
   * until then.
   */
  private watchFirstStatement(
    owner: QueryRunner,
    active: ActiveTransaction,
  ): void {
    const query = owner.query.bind(owner);
    const adopting = {
      statementRan: false,
      setLevel: async (level: IsolationLevel) => {
        // PostgreSQL takes it before the transaction's first statement; SQLite has one level
        if (this.postgres) {
          await query(
            `SET TRANSACTION ISOLATION LEVEL ${level}; ${boundsLockWaits(level) ? BOUNDED_LOCK_WAIT : 'SET LOCAL lock_timeout = DEFAULT'}`,
          );
        }
      },
    };
    owner.query = ((...args: Parameters<QueryRunner['query']>) => {
      adopting.statementRan = true;
      owner.query = query;
      return query(...args);
    }) as QueryRunner['query'];
    active.adopting = adopting;
  }
}
