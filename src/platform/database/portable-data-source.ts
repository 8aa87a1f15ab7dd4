import { AsyncLocalStorage } from 'node:async_hooks';
import type { Database, Statement } from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import {
  DataSource,
  MigrationExecutor,
  QueryFailedError,
  QueryResult,
  type DataSourceOptions,
  type EntityManager,
  type Migration,
  type QueryRunner,
} from 'typeorm';
import { traced, tracing } from '../tracing/tracing';
import { ConnectionGate } from './connection-gate';
import { NamedStatements } from './named-statements';
import type { CallbackPool } from './callback-pool';
import {
  ConnectionQueue,
  queueConnections,
  type QueueBounds,
} from './connection-queue';
import {
  DatabaseUnreachableError,
  explainConnectFailure,
  gaveWayToLiveTraffic,
  isLockNotGranted,
  isTransactionConflict,
} from './database-errors';

/** The transaction an async context runs in, and the runner that joins it. */
interface ActiveTransaction {
  dataSource: DataSource;
  /** The transaction's runner for code that joins: releasing it gives nothing back. */
  joined: QueryRunner;
  /** When its attempts must have had their connection, in ms (Date.now()). */
  deadline: number;
  /** What it was asked to run at; PostgreSQL's level, and on SQLite what the rule expects. */
  isolation: IsolationLevel;
  /**
   * It takes the level of the first transaction that joins it, while no statement has run in
   * it (`adoptingTransaction`); `statementRan` says whether one has.
   */
  adopting?: {
    statementRan: boolean;
    setLevel: (level: IsolationLevel) => Promise<void>;
  };
}

const activeTransaction = new AsyncLocalStorage<ActiveTransaction>();

/**
 * The runner of the transaction the caller runs in on this data source, if any: what every
 * statement of the caller must use to take part in it (EntitySql asks; TypeORM's own calls go
 * through `createQueryRunner`, which answers the same).
 */
export function transactionRunnerOf(
  dataSource: DataSource,
): QueryRunner | undefined {
  const active = activeTransaction.getStore();
  if (active === undefined) return undefined;
  if (active.dataSource !== dataSource) throw new TransactionOfAnotherApp();
  return active.joined;
}

/**
 * A statement of one app inside a transaction another app of the same process opened: the
 * two apps share @nestjs-cls/transactional's TransactionHost, one per process, so every
 * app's `@Transactional()` methods open their transactions on the data source of the app
 * started last, and their statements would run outside them, on their own.
 */
export class TransactionOfAnotherApp extends Error {
  override readonly name = 'TransactionOfAnotherApp';

  constructor() {
    super(
      'a statement ran inside a transaction that another Nest app of this process opened: @nestjs-cls/transactional keeps one TransactionHost per process, so the @Transactional() methods of every app run on the database of the app created last. Run one app per process at a time: close the first app before creating the next, or start the second as a process of its own (startServiceProcess in test/helpers/service-process.ts)',
    );
  }
}

/**
 * The isolation level the transaction the caller runs in on this data source was asked for
 * (SERIALIZABLE unless said), whichever the engine; undefined outside one. On SQLite every
 * transaction holds the one connection alone, whatever it asked for.
 */
export function transactionIsolationOf(
  dataSource: DataSource,
): IsolationLevel | undefined {
  const active = activeTransaction.getStore();
  return active?.dataSource === dataSource ? active.isolation : undefined;
}

/**
 * How long work waits its turn at PostgreSQL (DB_BUSY_TIMEOUT, DB_QUEUE_LIMIT), unless the
 * options say: a free pooled connection, and a transaction's retries after conflicts.
 */
export const DEFAULT_CONTENTION: QueueBounds = {
  timeoutMs: 10_000,
  limit: 1000,
};

/** DataSourceOptions, and how long work waits its turn at the database. */
export type PortableDataSourceOptions = DataSourceOptions & {
  contention?: QueueBounds;
  /** PostgreSQL: statements with parameters as named ones (named-statements.ts); on unless false. */
  preparedStatements?: boolean;
  migrationReporter?: MigrationReporter;
};

/**
 * How a transaction begins on SQLite: holding the write lock from its first statement. Within
 * one process the gate already runs transactions one at a time; another process on the same
 * file (a second instance during a rolling update, the command-line tool) is what this is for.
 * A deferred transaction that has read and then writes after another process committed fails
 * at once with SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out; an immediate one waits
 * its turn for the lock (better-sqlite3's 5 s) and then reads what is current.
 */
const BEGIN_IMMEDIATE = 'BEGIN IMMEDIATE TRANSACTION';

/** Statements kept prepared on SQLite's connection, by text: every text the code writes. */
const PREPARED_STATEMENTS = 256;

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

type Work<T> = (manager: EntityManager) => Promise<T>;

/** pg-pool's Pool as the driver holds it (`driver.master`), and what it was made with. */
interface PgPool extends CallbackPool {
  options: Record<string, unknown>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}

/** The pg module TypeORM's driver loaded (`driver.postgres`). */
interface PgModule {
  Pool: new (options: Record<string, unknown>) => PgPool;
}

/** TypeORM's isolation levels (the package root does not export their type). */
export type IsolationLevel = NonNullable<
  Parameters<QueryRunner['startTransaction']>[0]
>;

/**
 * The key of the session-level advisory lock that migrations run under on PostgreSQL: any
 * 64-bit number that no other code on the database uses. (The text "plant-store" as bytes.)
 */
export const MIGRATION_LOCK_KEY = 0x706c616e7473746fn;

/** How often an instance waiting for another's migrations asks for the lock again. */
const MIGRATION_LOCK_POLL_MS = 100;

/**
 * How long an instance waits for another's migrations, and retries its own that gave way to
 * live traffic, before it gives up and exits.
 */
export const MIGRATION_LOCK_WAIT_MS = 5 * 60_000;

/**
 * How long a migration's statement waits for a lock that live traffic holds on PostgreSQL
 * before the migrations are rolled back and tried again: below PostgreSQL's default
 * deadlock_timeout (1 s), so that in a deadlock between a migration and a live write the
 * migration gives way, not the write.
 */
export const MIGRATION_LOCK_TIMEOUT_MS = 500;

/** Told of what migrations do at start: the service logs it (database.module.ts). */
export interface MigrationReporter {
  /** `name` was applied and committed, its `up` taking `durationMs`. */
  applied(name: string, durationMs: number): void;
  /** The migrations were rolled back after waiting for live traffic's locks, and run again. */
  retrying(attempt: number, reason: string, delayMs: number): void;
}

/** How TypeORM spells a timestamp without a time zone on PostgreSQL, before normalising. */
const ZONELESS_TIMESTAMP_TYPES: unknown[] = [
  Date,
  'timestamp',
  'timestamp without time zone',
];

/** SQLite's one connection, as every statement and transaction of the data source meets it. */
interface SqliteConnection {
  /** Held by a transaction from BEGIN to its end; statements pass it between transactions. */
  gate: ConnectionGate;
  /** The one runner; its `query` passes the gate. */
  shared: QueryRunner;
  /** The shared runner's own `query`, run at once when `holds()`, through the gate otherwise. */
  gatedQuery: (holds: () => boolean) => QueryRunner['query'];
  /** A statement on its prepared statement, inside statementWrappers. */
  preparedQuery: QueryRunner['query'];
}

/**
 * TypeORM's DataSource, with the one column type that TypeORM cannot spell for both engines
 * from one entity: an instant. SQLite keeps `datetime` text in UTC; on PostgreSQL a `Date`
 * column would be `timestamp without time zone`, which shifts instants with the server's and
 * the service's time zones, so every timestamp there is `timestamptz`, as the migrations
 * create it. Entities keep writing `@Column({ type: Date })` and `@CreateDateColumn()`.
 *
 * The service (database.module.ts) and the TypeORM CLI (ormconfig.ts) both use this class, so
 * `npm run migration:generate` compares the migrated schema with what the service reads.
 */
export class PortableDataSource extends DataSource {
  declare readonly options: PortableDataSourceOptions;

  /** SQLite only: its one connection, shared by statements and held by a transaction. */
  private sqlite?: SqliteConnection;

  /** PostgreSQL only: the line in front of the pool. */
  private queue?: ConnectionQueue;
  /**
   * This instance's transactions that conflicted, run again one at a time, the oldest first
   * (by deadline: a transaction keeps the one of its first attempt).
   */
  private readonly retryLine = new ConnectionQueue(1, {
    ...this.contention,
    limit: Number.MAX_SAFE_INTEGER,
  });

  /** PostgreSQL only: readiness's own connection, apart from the pool and its line. */
  private pingPool?: PgPool;

  constructor(options: PortableDataSourceOptions) {
    super(options);
  }

  private get contention(): QueueBounds {
    return this.options.contention ?? DEFAULT_CONTENTION;
  }

  /**
   * Work waiting its turn for the database now: for a pooled connection on PostgreSQL, for
   * the one connection (behind a transaction) on SQLite.
   */
  get waiting(): number {
    return this.queue?.waiting ?? this.sqlite?.gate.waiting ?? 0;
  }

  /**
   * Wrapped around every statement while there are any (DatabaseMetrics times them, tracing
   * gives each a span); with none, a statement costs one array length more.
   */
  readonly statementWrappers: StatementWrapper[] = [];

  /** Told of every committed write (`writeCommitted`). */
  private readonly commitListeners: (() => void)[] = [];

  /** `run`, inside statementWrappers. */
  private observed(run: QueryRunner['query']): QueryRunner['query'] {
    // three parameters, not a rest parameter: every statement of the service passes here
    return ((sql: string, parameters?: unknown[], structured?: boolean) => {
      const wrappers = this.statementWrappers;
      if (wrappers.length === 0) {
        return run(sql, parameters, structured as true);
      }
      let call = (): Promise<unknown> =>
        run(sql, parameters, structured as true);
      for (const wrap of wrappers) {
        const inner = call;
        call = () => wrap(sql, inner);
      }
      return call();
    }) as QueryRunner['query'];
  }

  /**
   * `listener` runs after each committed write: evidence that the database takes writes
   * (DatabaseAvailability ends an outage of refused writes with it).
   */
  afterCommit(listener: () => void): void {
    this.commitListeners.push(listener);
  }

  /**
   * A write was committed: a transaction of `transaction()`, or a statement that changed rows
   * outside every transaction (EntitySql's writes), which SQL commits on its own.
   */
  writeCommitted(): void {
    for (const listener of this.commitListeners) listener();
  }

  /** A server that refuses us at start is reported in one line saying what to fix. */
  override async initialize(): Promise<this> {
    try {
      await super.initialize();
    } catch (error) {
      const url =
        this.options.type === 'postgres' ? this.options.url : undefined;
      throw (url && explainConnectFailure(error, url)) || error;
    }
    if (this.options.type === 'better-sqlite3') this.gateSqliteConnection();
    if (this.options.type === 'postgres') this.queuePooledConnections();
    if (tracing.tracer) this.statementWrappers.push(statementSpans(this));
    return this;
  }

  /**
   * Ends the wait of all the work waiting for a pooled connection, as DatabaseUnreachableError:
   * the database was found away (`cause`), and none of it has run.
   */
  refuseWaiting(cause: unknown): void {
    const reason = cause instanceof Error ? cause.message : String(cause);
    this.queue?.refuseWaiting(
      new DatabaseUnreachableError(
        `the database was found unreachable (${reason}) while this waited for a connection`,
        { cause },
      ),
    );
  }

  override async destroy(): Promise<void> {
    const pingPool = this.pingPool;
    this.pingPool = undefined;
    await pingPool?.end().catch(() => undefined);
    await super.destroy();
  }

  /**
   * Whether the database answers, within `timeoutMs`: what readiness asks. On PostgreSQL it
   * asks over a connection of its own, so that a pool busy with contended work (a line of
   * requests waiting their turn) never reads as a database that is away.
   */
  async ping(timeoutMs: number): Promise<void> {
    if (this.options.type !== 'postgres') {
      await withTimeout(this.query('SELECT 1'), timeoutMs);
      return;
    }
    if (!this.isInitialized) throw new Error('the database is not connected');
    this.pingPool ??= this.pingPoolLike(
      (this.driver as unknown as { master: PgPool }).master,
    );
    await withTimeout(this.pingPool.query('SELECT 1'), timeoutMs);
  }

  /** A pool of one connection, made as the driver's pool is (its URL, TLS and timeouts). */
  private pingPoolLike(master: PgPool): PgPool {
    const { Pool } = (this.driver as unknown as { postgres: PgModule })
      .postgres;
    const pool = new Pool({ ...master.options, max: 1 });
    // a failure is the caller's to see, in its query; an idle connection that dies is replaced
    (pool as unknown as NodeJS.EventEmitter).on('error', () => undefined);
    return pool;
  }

  /**
   * Every connection the pool gives out waits its turn in a bounded line first, and runs its
   * statements with parameters as named ones (named-statements.ts) unless
   * DB_PREPARED_STATEMENTS=false.
   */
  private queuePooledConnections(): void {
    const pool = (this.driver as unknown as { master: PgPool }).master;
    if (this.options.preparedStatements !== false) {
      new NamedStatements().nameStatementsOfPool(pool);
    }
    this.queue = new ConnectionQueue(Number(pool.options.max), this.contention);
    queueConnections(pool, this.queue, () => {
      const active = activeTransaction.getStore();
      return active?.dataSource === this ? active.deadline : undefined;
    });
  }

  /**
   * Transactions that are safe on both engines, with TypeORM's own signature: what
   * `@Transactional()` (@nestjs-cls/transactional's TypeORM adapter), `Repository.save` and a
   * module's own code all end up in (docs/conventions.md, "Business rules").
   *
   * - All or nothing, isolated from every other request. On SQLite the transaction holds the
   *   one connection alone while it runs (ConnectionGate): other requests' statements wait
   *   for it instead of landing inside it. On PostgreSQL it runs on a pooled connection of its
   *   own, SERIALIZABLE unless told otherwise, so a rule that reads, checks and writes in
   *   TypeScript holds under concurrency.
   * - A serialization failure or a deadlock on PostgreSQL runs `work` again, after a pause
   *   that grows, on a connection taken anew (the last one is given back meanwhile), for as
   *   long as the contention bound (DB_BUSY_TIMEOUT) allows: `work` must do nothing but
   *   database work. Then the conflict is the answer: 503 busy, nothing changed.
   * - The isolation level is for PostgreSQL; on SQLite every transaction is serializable, as
   *   it holds the one connection alone.
   * - Called inside a transaction, it joins it (a savepoint: its failure undoes only itself).
   *   TypeORM calls made inside `work` through any repository, injected or not, join it too.
   */
  override transaction<T>(work: Work<T>): Promise<T>;
  override transaction<T>(
    isolationLevel: IsolationLevel,
    work: Work<T>,
  ): Promise<T>;
  override async transaction<T>(
    isolationOrWork: IsolationLevel | Work<T> | undefined,
    maybeWork?: Work<T>,
  ): Promise<T> {
    const [isolation, work] =
      typeof isolationOrWork === 'function'
        ? [undefined, isolationOrWork]
        : [isolationOrWork, maybeWork!];
    const level = isolation ?? 'SERIALIZABLE';
    const joined = transactionRunnerOf(this);
    if (joined) {
      const active = activeTransaction.getStore()!;
      if (active.adopting && level !== active.isolation) {
        await this.adopt(active, level);
      }
      // a savepoint of the transaction it joins, at that transaction's isolation
      return joined.manager.transaction(work);
    }
    return this.retried(level, work, false);
  }

  /**
   * A transaction at the isolation level of the first transaction that joins it:
   * `@Transactional()`'s SERIALIZABLE, `@LockingTransaction()`'s READ COMMITTED, or `fallback`
   * while none has. For a wrapper that opens a transaction around code it does not know, as
   * the idempotency runner does around a handler, so that the handler's rule runs at the
   * level it was written for. A join at another level after a statement ran in it is refused,
   * with what to do instead. Retried on conflicts as `transaction` is.
   */
  adoptingTransaction<T>(fallback: IsolationLevel, work: Work<T>): Promise<T> {
    if (transactionRunnerOf(this)) return this.transaction(fallback, work);
    return this.retried(fallback, work, true);
  }

  /** The isolation level of the transaction `active` becomes `level`, before its first statement. */
  private async adopt(
    active: ActiveTransaction,
    level: IsolationLevel,
  ): Promise<void> {
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

  private async retried<T>(
    level: IsolationLevel,
    work: Work<T>,
    adopting: boolean,
  ): Promise<T> {
    const deadline = Date.now() + this.contention.timeoutMs;
    let inLine = false;
    try {
      for (;;) {
        try {
          return await this.runTransaction(level, deadline, work, adopting);
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

  private async runTransaction<T>(
    isolation: IsolationLevel,
    deadline: number,
    work: Work<T>,
    adopting: boolean,
  ): Promise<T> {
    const owner = this.createQueryRunner();
    const joined =
      this.sqlite !== undefined
        ? owner
        : (Object.create(owner, {
            release: { value: () => Promise.resolve() },
          }) as QueryRunner);
    const active: ActiveTransaction = {
      dataSource: this,
      joined,
      deadline,
      isolation,
    };
    try {
      return await activeTransaction.run(active, async () => {
        await this.begin(owner, isolation);
        if (adopting) this.watchFirstStatement(owner, active);
        try {
          const result = await work(owner.manager);
          await owner.commitTransaction();
          this.writeCommitted();
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
   * Begins `owner`'s transaction. On PostgreSQL in one round trip where TypeORM takes two
   * (START TRANSACTION, then SET TRANSACTION ISOLATION LEVEL), with the level's bound on
   * row-lock waits (boundsLockWaits). SQLite's own level is serializable, and TypeORM refuses it
   * any other.
   */
  private async begin(
    owner: QueryRunner,
    isolation: IsolationLevel,
  ): Promise<void> {
    if (this.options.type !== 'postgres') return owner.startTransaction();
    const query = owner.query.bind(owner);
    owner.query = ((sql: string) =>
      sql === 'START TRANSACTION'
        ? Promise.resolve()
        : query(
            `START TRANSACTION ISOLATION LEVEL ${isolation}${boundsLockWaits(isolation) ? `; ${BOUNDED_LOCK_WAIT}` : ''}`,
          )) as QueryRunner['query'];
    try {
      await owner.startTransaction(isolation);
    } finally {
      owner.query = query;
    }
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
        if (this.options.type === 'postgres') {
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

  /**
   * The data source's own manager (`dataSource.manager`, the one a repository injected outside
   * a transaction uses) opens its transactions here too, not on a runner of its own.
   */
  override createEntityManager(queryRunner?: QueryRunner): EntityManager {
    const manager = super.createEntityManager(queryRunner);
    if (!queryRunner) {
      manager.transaction = (...args: unknown[]) =>
        (this.transaction as (...a: unknown[]) => Promise<unknown>).apply(
          this,
          args,
        );
    }
    return manager;
  }

  /**
   * Inside a transaction, every TypeORM call of the caller (an injected repository, a query
   * builder) gets the transaction's runner and so takes part in it. On SQLite, elsewhere, a
   * session of its own over the one connection: its statements pass the gate, and a
   * transaction it starts (`Repository.save` starts one) holds the connection until it ends.
   */
  override createQueryRunner(
    mode?: Parameters<DataSource['createQueryRunner']>[0],
  ): QueryRunner {
    const joined = transactionRunnerOf(this);
    if (joined) return joined;
    return this.sqlite
      ? this.sqliteSession(this.sqlite)
      : this.withWrappers(super.createQueryRunner(mode));
  }

  /**
   * One statement outside every transaction, for plain SQL (EntitySql), answered as TypeORM's
   * runner answers it (a QueryResult, or a QueryFailedError) and timed like every statement.
   * It skips the EntityManager that `createQueryRunner` builds per call. On SQLite with the
   * connection free it runs at once on a statement prepared once per text: better-sqlite3 is
   * synchronous, so nothing comes between, and TypeORM's runner (its events, its awaits)
   * costs more than a statement by primary key (bench/README.md, "Issue 26").
   */
  plainStatement(sql: string, parameters: unknown[]): Promise<QueryResult> {
    const sqlite = this.sqlite;
    if (sqlite === undefined) return this.onPooledRunner(sql, parameters);
    // a transaction holds the connection, or waits for it: the statement waits its turn
    return sqlite.gate.busy
      ? sqlite.shared.query(sql, parameters, true)
      : sqlite.preparedQuery(sql, parameters, true);
  }

  private async onPooledRunner(
    sql: string,
    parameters: unknown[],
  ): Promise<QueryResult> {
    const runner = this.withWrappers(this.driver.createQueryRunner('master'));
    try {
      return await runner.query(sql, parameters, true);
    } finally {
      await runner.release();
    }
  }

  /** A PostgreSQL runner whose statements pass statementWrappers, while there are any. */
  private withWrappers(runner: QueryRunner): QueryRunner {
    if (this.statementWrappers.length > 0) {
      runner.query = this.observed(runner.query.bind(runner));
    }
    return runner;
  }

  /**
   * The one SQLite runner's statements go through the gate from now on: they run beside each
   * other, never inside another request's transaction. The holder's own pass at once.
   */
  private gateSqliteConnection(): void {
    const gate = new ConnectionGate(this.contention.timeoutMs);
    const shared = this.driver.createQueryRunner('master');
    const run = this.observed(shared.query.bind(shared));
    const gatedQuery = (holds: () => boolean) =>
      ((sql: string, parameters?: unknown[], structured?: boolean) =>
        holds()
          ? run(sql, parameters, structured as true)
          : gate.statement(() =>
              run(sql, parameters, structured as true),
            )) as QueryRunner['query'];
    // on SQLite a transaction's joiners get its session, the gate's holder
    shared.query = gatedQuery(
      () => gate.busy && transactionRunnerOf(this) === gate.holder,
    );
    this.sqlite = {
      gate,
      shared,
      gatedQuery,
      preparedQuery: this.observed(preparedStatements(this)),
    };
  }

  /**
   * A runner of its own over SQLite's one connection: its own transaction state, and a
   * transaction that holds the gate from BEGIN to COMMIT or ROLLBACK.
   */
  private sqliteSession({
    gate,
    shared,
    gatedQuery,
  }: SqliteConnection): QueryRunner {
    const session = Object.create(shared) as QueryRunner;
    const connection = (
      this.driver as unknown as {
        databaseConnection: { inTransaction: boolean };
      }
    ).databaseConnection;
    // SQLite rolls a transaction back by itself after SQLITE_FULL, SQLITE_IOERR or
    // SQLITE_NOMEM: its COMMIT fails, and so does the ROLLBACK after it, and TypeORM goes on
    // believing in the transaction. A session that did so held the gate for ever, and every
    // request after it waited without end (a full disk, issue 60): the connection says
    // whether a transaction is still open, and a session without one lets the gate go.
    const endOf =
      (end: 'commitTransaction' | 'rollbackTransaction') =>
      async (): Promise<void> => {
        try {
          await shared[end].call(session);
        } catch (error) {
          if (!session.isTransactionActive || connection.inTransaction) {
            throw error;
          }
          Object.assign(session, {
            isTransactionActive: false,
            transactionDepth: 0,
          });
          // nothing is left to roll back: the rollback is done
          if (end === 'commitTransaction') throw error;
        } finally {
          if (!session.isTransactionActive) gate.release(session);
        }
      };
    const query = gatedQuery(() => gate.holder === session);
    Object.assign(session, {
      isTransactionActive: false,
      transactionDepth: 0,
      query: ((sql: string, ...rest: unknown[]) =>
        (query as (...args: unknown[]) => Promise<unknown>)(
          sql === 'BEGIN TRANSACTION' ? BEGIN_IMMEDIATE : sql,
          ...rest,
        )) as QueryRunner['query'],
      startTransaction: async (isolation?: IsolationLevel) => {
        if (!session.isTransactionActive) await gate.acquire(session);
        try {
          await shared.startTransaction.call(session, isolation);
        } finally {
          if (!session.isTransactionActive) gate.release(session);
        }
      },
      commitTransaction: endOf('commitTransaction'),
      rollbackTransaction: endOf('rollbackTransaction'),
      // the connection stays open for everyone; a joiner's release gives nothing back
      release: () => Promise.resolve(),
    });
    Object.assign(session, { manager: this.createEntityManager(session) });
    return session;
  }

  /**
   * Migrations are applied by one instance at a time, beside live traffic (docs/operations.md,
   * "Upgrades"):
   *
   * - On PostgreSQL, under an advisory lock: instances started together on an empty or
   *   outdated database take turns, the first applies each migration and the others find
   *   nothing left to do. TypeORM has no such lock (typeorm#4588). The lock is taken with
   *   pg_try_advisory_lock in a loop, so that every statement stays within the statement
   *   timeout; it belongs to the session that also runs the migrations, and PostgreSQL
   *   releases it if this process dies. Each migration commits on its own. Each statement
   *   waits at most MIGRATION_LOCK_TIMEOUT_MS for a lock that live traffic holds: past it the
   *   migration is rolled back and the pending ones tried again, so that live writes wait
   *   briefly instead of deadlocking.
   * - On SQLite, in one transaction that holds the write lock from its start, which another
   *   process waits for: its migrations and a look at which ran are one step.
   *
   * Each migration applied is reported once committed (`migrationReporter`).
   */
  override async runMigrations(
    options?: Parameters<DataSource['runMigrations']>[0],
  ): Promise<Migration[]> {
    this.timeMigrations();
    this.migrationDurations.clear();
    const runner = this.createQueryRunner();
    let applied: Migration[];
    try {
      applied =
        this.options.type === 'postgres'
          ? await this.migratePostgres(runner, options)
          : await this.migrateSqlite(runner, options);
    } finally {
      await runner.release();
    }
    for (const { name } of applied) {
      this.options.migrationReporter?.applied(
        name,
        this.migrationDurations.get(name) ?? 0,
      );
    }
    return applied;
  }

  private readonly migrationDurations = new Map<string, number>();
  private migrationsTimed = false;

  /** Each migration's `up` notes how long it took in migrationDurations. */
  private timeMigrations(): void {
    if (this.migrationsTimed) return;
    this.migrationsTimed = true;
    for (const migration of this.migrations) {
      const up = migration.up.bind(migration);
      const name = migration.name ?? migration.constructor.name;
      migration.up = async (queryRunner) => {
        const started = performance.now();
        await up(queryRunner);
        this.migrationDurations.set(
          name,
          Math.round(performance.now() - started),
        );
      };
    }
  }

  /** TypeORM's executor on `runner`, with the settings DataSource.runMigrations gives it. */
  private migrationExecutor(
    runner: QueryRunner,
    options: Parameters<DataSource['runMigrations']>[0],
    transaction: 'all' | 'each' | 'none',
  ): MigrationExecutor {
    const executor = new MigrationExecutor(this, runner);
    Object.assign(executor, { transaction, fake: options?.fake ?? false });
    return executor;
  }

  private async migrateSqlite(
    runner: QueryRunner,
    options: Parameters<DataSource['runMigrations']>[0],
  ): Promise<Migration[]> {
    // foreign keys are turned off outside a transaction, where the pragma takes effect
    await runner.beforeMigration();
    try {
      // TypeORM's startTransaction says BEGIN (deferred) only: the runner is told by hand
      // that it is in the transaction, so that the executor starts none and commit ends it
      await runner.query(BEGIN_IMMEDIATE);
      Object.assign(runner, { isTransactionActive: true, transactionDepth: 1 });
      try {
        const applied = await this.migrationExecutor(
          runner,
          options,
          'all',
        ).executePendingMigrations();
        await runner.commitTransaction();
        return applied;
      } catch (error) {
        if (runner.isTransactionActive) {
          await runner.rollbackTransaction().catch(() => undefined);
        }
        throw error;
      }
    } finally {
      await runner.afterMigration();
    }
  }

  private async migratePostgres(
    runner: QueryRunner,
    options: Parameters<DataSource['runMigrations']>[0],
  ): Promise<Migration[]> {
    const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
    await this.acquireMigrationLock(runner, deadline);
    try {
      await runner.query(`SET lock_timeout = ${MIGRATION_LOCK_TIMEOUT_MS}`);
      // each in its own transaction, so that one that builds an index CONCURRENTLY may run
      // outside any (its `transaction = false`), and a retry resumes where the last gave way
      const executor = () =>
        this.migrationExecutor(
          runner,
          options,
          options?.transaction ??
            this.options.migrationsTransactionMode ??
            'each',
        );
      for (let attempt = 1; ; attempt += 1) {
        try {
          const applied = await executor().executePendingMigrations();
          if (attempt === 1) return applied;
          // an attempt that gave way had committed those before it: applied too, as the
          // migrations whose `up` ran in this call and are recorded now
          return (await executor().getExecutedMigrations())
            .filter(({ name }) => this.migrationDurations.has(name))
            .sort((first, second) => first.timestamp - second.timestamp);
        } catch (error) {
          if (!gaveWayToLiveTraffic(error) || Date.now() > deadline)
            throw error;
          const delayMs = Math.round(
            MIGRATION_LOCK_TIMEOUT_MS * (1 + Math.random()),
          );
          this.options.migrationReporter?.retrying(
            attempt,
            (error as Error).message,
            delayMs,
          );
          await new Promise((resolve) => setTimeout(resolve, delayMs));
        }
      }
    } finally {
      await runner.query('RESET lock_timeout');
      await runner.query('SELECT pg_advisory_unlock($1)', [
        String(MIGRATION_LOCK_KEY),
      ]);
    }
  }

  private async acquireMigrationLock(
    runner: QueryRunner,
    deadline: number,
  ): Promise<void> {
    for (;;) {
      const [{ locked }] = (await runner.query(
        'SELECT pg_try_advisory_lock($1) AS locked',
        [String(MIGRATION_LOCK_KEY)],
      )) as { locked: boolean }[];
      if (locked) return;
      if (Date.now() > deadline) {
        throw new Error(
          `another instance has held the migration lock for more than ${MIGRATION_LOCK_WAIT_MS / 1000} s; is a migration stuck?`,
        );
      }
      await new Promise((resolve) =>
        setTimeout(resolve, MIGRATION_LOCK_POLL_MS),
      );
    }
  }

  protected override async buildMetadatas(): Promise<void> {
    await super.buildMetadatas();
    if (this.options.type !== 'postgres') return;
    for (const metadata of this.entityMetadatas) {
      for (const column of metadata.columns) {
        if (ZONELESS_TIMESTAMP_TYPES.includes(column.type)) {
          column.type = 'timestamptz';
        }
      }
    }
  }
}

/** Runs a statement (`run`), doing something around it: timing it, giving it a span. */
export type StatementWrapper = (
  sql: string,
  run: () => Promise<unknown>,
) => Promise<unknown>;

/** The database system, as OpenTelemetry names it (`db.system.name`). */
export function databaseSystemOf(dataSource: DataSource): string {
  return dataSource.options.type === 'postgres' ? 'postgresql' : 'sqlite';
}

/**
 * A span for each statement, named by its operation (`SELECT`), its text without values: under
 * the span of the work it serves (a request, a webhook attempt), or on its own when
 * TRACES_BACKGROUND asks.
 */
function statementSpans(dataSource: DataSource): StatementWrapper {
  const system = databaseSystemOf(dataSource);
  return (sql, run) => {
    // an idle instance's polls would be a root span or two a second, every second
    if (!tracing.background && tracing.activeIds?.() === undefined)
      return run();
    const operation = /^\s*(\w+)/.exec(sql)?.[1]?.toUpperCase() ?? system;
    return traced(
      operation,
      {
        'db.system.name': system,
        'db.operation.name': operation,
        'db.query.text': sql,
      },
      run,
      tracing.clientKind,
    );
  };
}

/**
 * Runs statements on SQLite's connection as TypeORM's better-sqlite3 runner does (booleans as
 * 0 and 1, rows or the count of changed rows, failures as QueryFailedError), on statements
 * prepared once per text, without its events and awaits. For use while no transaction holds
 * the connection (ConnectionGate): the statement is over before anything else can run.
 */
function preparedStatements(dataSource: DataSource): QueryRunner['query'] {
  const connection = (
    dataSource.driver as unknown as { databaseConnection: Database }
  ).databaseConnection;
  const statements = new LRUCache<string, Statement>({
    max: PREPARED_STATEMENTS,
  });
  return ((sql: string, parameters: unknown[] = []) => {
    const values = parameters.map((value) =>
      typeof value === 'boolean' ? Number(value) : value,
    );
    try {
      let statement = statements.get(sql);
      if (statement === undefined) {
        statement = connection.prepare(sql);
        statements.set(sql, statement);
      }
      const result = new QueryResult();
      if (statement.reader) {
        result.records = result.raw = statement.all(...values);
      } else {
        const { changes, lastInsertRowid } = statement.run(...values);
        result.affected = changes;
        result.raw = lastInsertRowid;
      }
      return Promise.resolve(result);
    } catch (error) {
      return Promise.reject(new QueryFailedError(sql, values, error as Error));
    }
  }) as QueryRunner['query'];
}

/** `promise`, or a rejection once `ms` pass first. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the database did not answer within ${ms} ms`)),
      ms,
    );
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}
