import {
  MigrationExecutor,
  type DataSource,
  type Migration,
  type QueryRunner,
} from 'typeorm';
import { gaveWayToLiveTraffic } from './database-errors';
import { BEGIN_IMMEDIATE } from './sqlite-connection';

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

type MigrationOptions = Parameters<DataSource['runMigrations']>[0];

/**
 * Migrations applied by one instance at a time, beside live traffic (docs/operations.md,
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
 * Each migration applied is reported once committed (`reporter`).
 */
export class LockedMigrations {
  private readonly durations = new Map<string, number>();
  private timed = false;

  constructor(
    private readonly dataSource: DataSource,
    private readonly reporter?: MigrationReporter,
  ) {}

  /** The pending migrations applied on `runner`'s session, which this releases. */
  async run(
    runner: QueryRunner,
    options: MigrationOptions,
  ): Promise<Migration[]> {
    this.timeMigrations();
    this.durations.clear();
    let applied: Migration[];
    try {
      applied =
        this.dataSource.options.type === 'postgres'
          ? await this.migratePostgres(runner, options)
          : await this.migrateSqlite(runner, options);
    } finally {
      await runner.release();
    }
    for (const { name } of applied) {
      this.reporter?.applied(name, this.durations.get(name) ?? 0);
    }
    return applied;
  }

  /** Each migration's `up` notes how long it took in `durations`. */
  private timeMigrations(): void {
    if (this.timed) return;
    this.timed = true;
    for (const migration of this.dataSource.migrations) {
      const up = migration.up.bind(migration);
      const name = migration.name ?? migration.constructor.name;
      migration.up = async (queryRunner) => {
        const started = performance.now();
        await up(queryRunner);
        this.durations.set(name, Math.round(performance.now() - started));
      };
    }
  }

  /** TypeORM's executor on `runner`, with the settings DataSource.runMigrations gives it. */
  private executor(
    runner: QueryRunner,
    options: MigrationOptions,
    transaction: 'all' | 'each' | 'none',
  ): MigrationExecutor {
    const executor = new MigrationExecutor(this.dataSource, runner);
    Object.assign(executor, { transaction, fake: options?.fake ?? false });
    return executor;
  }

  private async migrateSqlite(
    runner: QueryRunner,
    options: MigrationOptions,
  ): Promise<Migration[]> {
    // foreign keys are turned off outside a transaction, where the pragma takes effect
    await runner.beforeMigration();
    try {
      // TypeORM's startTransaction says BEGIN (deferred) only: the runner is told by hand
      // that it is in the transaction, so that the executor starts none and commit ends it
      await runner.query(BEGIN_IMMEDIATE);
      Object.assign(runner, { isTransactionActive: true, transactionDepth: 1 });
      try {
        const applied = await this.executor(
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
    options: MigrationOptions,
  ): Promise<Migration[]> {
    const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
    await this.acquireLock(runner, deadline);
    try {
      await runner.query(`SET lock_timeout = ${MIGRATION_LOCK_TIMEOUT_MS}`);
      // each in its own transaction, so that one that builds an index CONCURRENTLY may run
      // outside any (its `transaction = false`), and a retry resumes where the last gave way
      const executor = () =>
        this.executor(
          runner,
          options,
          options?.transaction ??
            this.dataSource.options.migrationsTransactionMode ??
            'each',
        );
      for (let attempt = 1; ; attempt += 1) {
        try {
          const applied = await executor().executePendingMigrations();
          if (attempt === 1) return applied;
          // an attempt that gave way had committed those before it: applied too, as the
          // migrations whose `up` ran in this call and are recorded now
          return (await executor().getExecutedMigrations())
            .filter(({ name }) => this.durations.has(name))
            .sort((first, second) => first.timestamp - second.timestamp);
        } catch (error) {
          if (!gaveWayToLiveTraffic(error) || Date.now() > deadline)
            throw error;
          const delayMs = Math.round(
            MIGRATION_LOCK_TIMEOUT_MS * (1 + Math.random()),
          );
          this.reporter?.retrying(attempt, (error as Error).message, delayMs);
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

  private async acquireLock(
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
}
