import {
  DataSource,
  type DataSourceOptions,
  type EntityManager,
  type Migration,
  type QueryResult,
  type QueryRunner,
} from 'typeorm';
import { tracing } from '../tracing/tracing';
import type { ConnectionQueue, QueueBounds } from './connection-queue';
import {
  DatabaseUnreachableError,
  explainConnectFailure,
} from './database-errors';
import { LockedMigrations, type MigrationReporter } from './locked-migrations';
import {
  poolOfOne,
  queuePooledConnections,
  type PgPool,
} from './postgres-pool';
import {
  gateSqliteConnection,
  sqliteSession,
  type SqliteConnection,
} from './sqlite-connection';
import {
  observedBy,
  statementSpans,
  type StatementWrapper,
} from './statement-observers';
import {
  activeTransaction,
  transactionRunnerOf,
  type IsolationLevel,
  type Work,
} from './transaction-context';
import { TransactionRunner } from './transaction-runner';

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

/** How TypeORM spells a timestamp without a time zone on PostgreSQL, before normalising. */
const ZONELESS_TIMESTAMP_TYPES: unknown[] = [
  Date,
  'timestamp',
  'timestamp without time zone',
];

/**
 * TypeORM's DataSource, the same for both engines: transactions that are safe on each
 * (`transaction`), one way in for every statement (the line in front of PostgreSQL's pool,
 * SQLite's one connection behind its gate, the statement wrappers), and migrations applied by
 * one instance at a time beside live traffic. Its parts each have a file of their own here:
 * transaction-runner.ts, sqlite-connection.ts, postgres-pool.ts, locked-migrations.ts,
 * statement-observers.ts.
 *
 * It also spells the one column type that TypeORM cannot spell for both engines from one
 * entity: an instant. SQLite keeps `datetime` text in UTC; on PostgreSQL a `Date` column would
 * be `timestamp without time zone`, which shifts instants with the server's and the service's
 * time zones, so every timestamp there is `timestamptz`, as the migrations create it. Entities
 * keep writing `@Column({ type: Date })` and `@CreateDateColumn()`.
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

  /** PostgreSQL only: readiness's own connection, apart from the pool and its line. */
  private pingPool?: PgPool;

  /** Opens transactions, and runs them again on conflicts. */
  private readonly transactions: TransactionRunner;

  private readonly lockedMigrations: LockedMigrations;

  constructor(options: PortableDataSourceOptions) {
    super(options);
    this.transactions = new TransactionRunner(this, this.contention);
    this.lockedMigrations = new LockedMigrations(
      this,
      options.migrationReporter,
    );
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
   * Wrapped around every statement while there are any (DatabaseMetricsService times them, tracing
   * gives each a span); with none, a statement costs one array length more.
   */
  readonly statementWrappers: StatementWrapper[] = [];

  /** Told of every committed write (`writeCommitted`). */
  private readonly commitListeners: (() => void)[] = [];

  /**
   * `listener` runs after each committed write: evidence that the database takes writes
   * (DatabaseAvailabilityService ends an outage of refused writes with it).
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
    if (this.options.type === 'better-sqlite3') {
      this.sqlite = gateSqliteConnection(
        this,
        this.contention.timeoutMs,
        (run) => observedBy(this.statementWrappers, run),
      );
    }
    if (this.options.type === 'postgres') {
      this.queue = queuePooledConnections(
        this,
        this.contention,
        this.options.preparedStatements !== false,
      );
    }
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
    this.pingPool ??= poolOfOne(this);
    await withTimeout(this.pingPool.query('SELECT 1'), timeoutMs);
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
        await this.transactions.adopt(active, level);
      }
      // a savepoint of the transaction it joins, at that transaction's isolation
      return joined.manager.transaction(work);
    }
    return this.transactions.run(level, work, false);
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
    return this.transactions.run(fallback, work, true);
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
      ? sqliteSession(this, this.sqlite)
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
      runner.query = observedBy(
        this.statementWrappers,
        runner.query.bind(runner),
      );
    }
    return runner;
  }

  /**
   * Migrations applied by one instance at a time, beside live traffic, each reported once
   * committed (locked-migrations.ts).
   */
  override runMigrations(
    options?: Parameters<DataSource['runMigrations']>[0],
  ): Promise<Migration[]> {
    return this.lockedMigrations.run(this.createQueryRunner(), options);
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
