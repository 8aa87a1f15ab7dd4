import Database from 'better-sqlite3';
import {
  sqliteKind,
  timeFromText,
  type ArchiveColumn,
  type ArchiveTable,
  type CanonicalRow,
  type CanonicalValue,
} from './archive-format';
import { FENCED_WRITE_MESSAGE } from '../database/database-errors';
import {
  canonicalInt,
  FENCE_TRIGGER,
  inCanonicalOrder,
  MIGRATIONS_TABLE,
  NOT_CARRIED,
  quoteName,
  READ_BATCH,
  unreadable,
  type StoreConnection,
  type StoreTable,
} from './store-connection';

/** The database's time as TypeORM writes a Date to SQLite, which compares as text. */
const SQLITE_NOW = "strftime('%Y-%m-%d %H:%M:%f', 'now')";

/** How long a statement waits for another connection's lock on the file. */
const BUSY_TIMEOUT_MS = 10_000;

/**
 * A SQLite store through its own better-sqlite3 connection. A snapshot is a read transaction:
 * under WAL, the service's writes go on beside it, and it sees none of them.
 */
export class SqliteStore implements StoreConnection {
  readonly engine = 'sqlite';
  private readonly db: Database.Database;
  private triggers: { name: string; sql: string }[] = [];

  constructor(path: string, { create = false } = {}) {
    this.db = new Database(path, {
      fileMustExist: !create,
      timeout: BUSY_TIMEOUT_MS,
    });
    this.db.defaultSafeIntegers(true);
  }

  beginSnapshot(): Promise<void> {
    this.db.exec('BEGIN');
    // the snapshot is taken by the transaction's first read
    this.db.prepare('SELECT count(*) FROM sqlite_master').get();
    return Promise.resolve();
  }

  beginLoad(): Promise<void> {
    this.db.exec('BEGIN IMMEDIATE');
    // triggers would publish events for restored rows and number restored events again: they
    // are dropped for the load and made again, as they were, before it commits
    this.triggers = this.db
      .prepare(
        "SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND sql IS NOT NULL",
      )
      .all() as { name: string; sql: string }[];
    for (const { name } of this.triggers) {
      this.db.exec(`DROP TRIGGER ${quoteName(name)}`);
    }
    return Promise.resolve();
  }

  commit(): Promise<void> {
    for (const { sql } of this.triggers) this.db.exec(sql);
    this.triggers = [];
    this.db.exec('COMMIT');
    return Promise.resolve();
  }

  rollback(): Promise<void> {
    if (this.db.inTransaction) this.db.exec('ROLLBACK');
    this.triggers = [];
    return Promise.resolve();
  }

  now(): Promise<Date> {
    const ms = this.db
      .prepare(
        "SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)",
      )
      .pluck()
      .get() as bigint;
    return Promise.resolve(new Date(Number(ms)));
  }

  migrations(): Promise<string[] | undefined> {
    if (!this.tableExists(MIGRATIONS_TABLE)) return Promise.resolve(undefined);
    return Promise.resolve(
      this.db
        .prepare(
          `SELECT "name" FROM ${quoteName(MIGRATIONS_TABLE)} ORDER BY "timestamp", "id"`,
        )
        .pluck()
        .all() as string[],
    );
  }

  private tableExists(name: string): boolean {
    return (
      this.db
        .prepare(
          "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
        )
        .get(name) !== undefined
    );
  }

  tables(): Promise<StoreTable[]> {
    const names = this.db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
      )
      .pluck()
      .all()
      .filter((name) => !NOT_CARRIED.has(name as string)) as string[];
    const tables = names.map((table): StoreTable => {
      const columns = (
        this.db.pragma(`table_info(${quoteName(table)})`) as {
          name: string;
          type: string;
        }[]
      ).map(({ name, type }) => ({ name, kind: sqliteKind(type) }));
      const dependsOn = (
        this.db.pragma(`foreign_key_list(${quoteName(table)})`) as {
          table: string;
        }[]
      ).map((key) => key.table);
      return { table, columns, dependsOn };
    });
    return Promise.resolve(inCanonicalOrder(tables));
  }

  hasRows(table: string): Promise<boolean> {
    return Promise.resolve(
      this.db.prepare(`SELECT 1 FROM ${quoteName(table)} LIMIT 1`).get() !==
        undefined,
    );
  }

  *rows(table: ArchiveTable): Generator<CanonicalRow[]> {
    const statement = this.db
      .prepare(
        `SELECT ${table.columns.map(({ name }) => quoteName(name)).join(', ')} FROM ${quoteName(table.table)}`,
      )
      .raw(true);
    let batch: CanonicalRow[] = [];
    for (const row of statement.iterate() as Iterable<unknown[]>) {
      batch.push(
        row.map((value, index) =>
          canonical(table.table, table.columns[index], value),
        ),
      );
      if (batch.length >= READ_BATCH) {
        yield batch;
        batch = [];
      }
    }
    if (batch.length > 0) yield batch;
  }

  clear(table: string): Promise<void> {
    this.db.prepare(`DELETE FROM ${quoteName(table)}`).run();
    return Promise.resolve();
  }

  private readonly inserts = new Map<string, Database.Statement>();

  insert(table: ArchiveTable, rows: readonly CanonicalRow[]): Promise<void> {
    let statement = this.inserts.get(table.table);
    if (!statement) {
      statement = this.db.prepare(
        `INSERT INTO ${quoteName(table.table)} (${table.columns.map(({ name }) => quoteName(name)).join(', ')}) VALUES (${table.columns.map(() => '?').join(', ')})`,
      );
      this.inserts.set(table.table, statement);
    }
    for (const row of rows) {
      statement.run(
        row.map((value, index) => stored(table.columns[index], value)),
      );
    }
    return Promise.resolve();
  }

  resetSequences(): Promise<void> {
    // AUTOINCREMENT tables count in sqlite_sequence; a table restored emptied of its counter
    // would otherwise hand out a rowid again
    if (this.tableExists('sqlite_sequence')) {
      const counted = this.db
        .prepare('SELECT name FROM sqlite_sequence')
        .pluck()
        .all() as string[];
      for (const name of counted) {
        this.db
          .prepare(
            `UPDATE sqlite_sequence SET seq = max(seq, (SELECT coalesce(max(rowid), 0) FROM ${quoteName(name)})) WHERE name = ?`,
          )
          .run(name);
      }
    }
    return Promise.resolve();
  }

  beginBarrier(): Promise<void> {
    this.db.exec('BEGIN IMMEDIATE');
    return Promise.resolve();
  }

  fence(tables: readonly string[]): Promise<void> {
    for (const table of tables) {
      for (const operation of ['INSERT', 'UPDATE', 'DELETE']) {
        this.db.exec(
          `CREATE TRIGGER ${quoteName(`${FENCE_TRIGGER}_${table}_${operation.toLowerCase()}`)} BEFORE ${operation} ON ${quoteName(table)} ` +
            `BEGIN SELECT RAISE(ABORT, '${FENCED_WRITE_MESSAGE}'); END`,
        );
      }
    }
    return Promise.resolve();
  }

  unfence(): Promise<void> {
    const names = this.db
      .prepare(
        "SELECT name FROM sqlite_master WHERE type = 'trigger' AND substr(name, 1, ?) = ?",
      )
      .pluck()
      .all(FENCE_TRIGGER.length + 1, `${FENCE_TRIGGER}_`) as string[];
    this.db.transaction(() => {
      for (const name of names) this.db.exec(`DROP TRIGGER ${quoteName(name)}`);
    })();
    return Promise.resolve();
  }

  workUnderWay(): Promise<number> {
    return Promise.resolve(
      Number(
        this.db
          .prepare(
            `SELECT (SELECT count(*) FROM "webhook_deliveries" WHERE "status" = 'pending' AND "claimed_until" > ${SQLITE_NOW}) + ` +
              `(SELECT count(*) FROM "scheduled_jobs" WHERE "leased_until" > ${SQLITE_NOW})`,
          )
          .pluck()
          .get(),
      ),
    );
  }

  run(sql: string, parameters: unknown[]): Promise<void> {
    this.db.prepare(sql.replaceAll('{now}', SQLITE_NOW)).run(...parameters);
    return Promise.resolve();
  }

  close(): Promise<void> {
    if (this.db.open) {
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      this.db.close();
    }
    return Promise.resolve();
  }
}

/** A value as SQLite returned it, in the archive's form for its column's kind. */
function canonical(
  table: string,
  column: ArchiveColumn,
  value: unknown,
): CanonicalValue {
  if (value === null) return null;
  switch (column.kind) {
    case 'int':
      return canonicalInt(value) ?? unreadable(table, column, value);
    case 'real':
      if (typeof value === 'bigint') return Number(value);
      return typeof value === 'number' && Number.isFinite(value)
        ? value
        : unreadable(table, column, value);
    case 'time': {
      const date = typeof value === 'string' ? timeFromText(value) : undefined;
      return date?.toISOString() ?? unreadable(table, column, value);
    }
    case 'bool':
      if (value === 0n || value === 1n) return value === 1n;
      return unreadable(table, column, value);
    case 'bytes':
      if (Buffer.isBuffer(value)) return value.toString('base64');
      return unreadable(table, column, value);
    case 'text':
      if (typeof value === 'string') return value;
      // SQLite keeps what it is given: a number in a text column is its text
      if (typeof value === 'bigint' || typeof value === 'number') {
        return String(value);
      }
      return unreadable(table, column, value);
  }
}

/** A canonical value as this engine stores its column's kind: times as TypeORM writes them. */
function stored(column: ArchiveColumn, value: CanonicalValue): unknown {
  if (value === null) return null;
  switch (column.kind) {
    case 'int':
      return BigInt(value);
    case 'time':
      // as TypeORM writes a Date to SQLite: `2026-12-05 09:30:00.123`, in UTC
      return new Date(value as string)
        .toISOString()
        .replace('T', ' ')
        .slice(0, 23);
    case 'bool':
      return value ? 1 : 0;
    case 'bytes':
      return Buffer.from(value as string, 'base64');
    default:
      return value;
  }
}
