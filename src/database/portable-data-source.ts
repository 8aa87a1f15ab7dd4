import {
  DataSource,
  MigrationExecutor,
  type Migration,
  type QueryRunner,
} from 'typeorm';
import { explainConnectFailure } from './database-errors';

/**
 * The key of the session-level advisory lock that migrations run under on PostgreSQL: any
 * 64-bit number that no other code on the database uses. (The text "plant-store" as bytes.)
 */
export const MIGRATION_LOCK_KEY = 0x706c616e7473746fn;

/** How often an instance waiting for another's migrations asks for the lock again. */
const MIGRATION_LOCK_POLL_MS = 100;

/** How long an instance waits for another's migrations before it gives up and exits. */
export const MIGRATION_LOCK_WAIT_MS = 5 * 60_000;

/** How TypeORM spells a timestamp without a time zone on PostgreSQL, before normalising. */
const ZONELESS_TIMESTAMP_TYPES: unknown[] = [
  Date,
  'timestamp',
  'timestamp without time zone',
];

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
  /** A server that refuses us at start is reported in one line saying what to fix. */
  override async initialize(): Promise<this> {
    try {
      return await super.initialize();
    } catch (error) {
      const url =
        this.options.type === 'postgres' ? this.options.url : undefined;
      throw (url && explainConnectFailure(error, url)) || error;
    }
  }

  /**
   * On PostgreSQL, migrations run under an advisory lock: instances started together on an
   * empty or outdated database take turns, the first applies each migration and the others
   * find nothing left to do. TypeORM has no such lock (typeorm#4588). The lock is taken with
   * pg_try_advisory_lock in a loop, so that every statement stays within the statement
   * timeout. The lock belongs to one connection's session, which also runs the migrations
   * (a pool of one cannot deadlock), and PostgreSQL releases it if this process dies.
   */
  override async runMigrations(
    options?: Parameters<DataSource['runMigrations']>[0],
  ): Promise<Migration[]> {
    if (this.options.type !== 'postgres') return super.runMigrations(options);
    const runner = this.createQueryRunner();
    try {
      await this.acquireMigrationLock(runner);
      try {
        const executor = new MigrationExecutor(this, runner);
        // the executor's settings, as DataSource.runMigrations makes them
        Object.assign(executor, {
          transaction:
            // eslint-disable-next-line no-restricted-properties -- the migrations' own mode
            options?.transaction ??
            this.options.migrationsTransactionMode ??
            'all',
          fake: options?.fake ?? false,
        });
        return await executor.executePendingMigrations();
      } finally {
        await runner.query('SELECT pg_advisory_unlock($1)', [
          String(MIGRATION_LOCK_KEY),
        ]);
      }
    } finally {
      await runner.release();
    }
  }

  private async acquireMigrationLock(runner: QueryRunner): Promise<void> {
    const deadline = Date.now() + MIGRATION_LOCK_WAIT_MS;
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
