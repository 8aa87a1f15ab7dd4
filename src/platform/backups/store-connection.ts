import type {
  ArchiveColumn,
  ArchiveTable,
  CanonicalRow,
  CanonicalValue,
} from './archive-format';

/** The table TypeORM records applied migrations in: the schema's version, not carried as rows. */
export const MIGRATIONS_TABLE = 'migrations';

/**
 * Tables that belong to one database, not to the store it holds: the moves of the store away
 * from it (src/platform/database/store-move.entity.ts), which would fence a store restored elsewhere.
 */
export const NOT_CARRIED: ReadonlySet<string> = new Set([
  MIGRATIONS_TABLE,
  'store_moves',
]);

/**
 * Tables that a service writes by itself when it starts on an empty database, or that the
 * migrations seed: a target holding rows in these alone holds no data yet, and a restore
 * replaces those rows with the archive's.
 */
export const BOOKKEEPING_TABLES: ReadonlySet<string> = new Set([
  'event_log',
  'scheduled_jobs',
  'event_handlers',
]);

/** A table of the store as its database describes it. */
export interface StoreTable extends ArchiveTable {
  /** The tables its foreign keys name, loaded before it. */
  dependsOn: string[];
}

/**
 * One connection to a store, of either engine, read in one snapshot or written in one
 * transaction: what backup, restore, verify and move share (backups.ts).
 */
export interface StoreConnection {
  readonly engine: 'sqlite' | 'postgres';
  /** A read-only snapshot: every read sees the store as it was at this moment. */
  beginSnapshot(): Promise<void>;
  /** A transaction that writes the store, with its triggers off until `commit`. */
  beginLoad(tables: readonly StoreTable[]): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  /** The database's time now. */
  now(): Promise<Date>;
  /** The migrations applied, oldest first; undefined where there is no migrations table. */
  migrations(): Promise<string[] | undefined>;
  /** Every table but the migrations', parents before the tables whose keys name them. */
  tables(): Promise<StoreTable[]>;
  /** Whether the table holds a row. */
  hasRows(table: string): Promise<boolean>;
  /** A table's rows in canonical form, a batch at a time, with the columns in the given order. */
  rows(
    table: ArchiveTable,
  ): AsyncIterable<CanonicalRow[]> | Iterable<CanonicalRow[]>;
  /** Empties a table (inside a load). */
  clear(table: string): Promise<void>;
  /** Writes rows given in canonical form (inside a load). */
  insert(table: ArchiveTable, rows: readonly CanonicalRow[]): Promise<void>;
  /** Sets every sequence and counter past the largest value its column holds (inside a load). */
  resetSequences(tables: readonly StoreTable[]): Promise<void>;
  /** A write transaction that waits for the writes under way, and holds off all others. */
  beginBarrier(): Promise<void>;
  /** Makes every write to these tables fail from its commit on (inside a barrier): a move's fence. */
  fence(tables: readonly string[]): Promise<void>;
  /** Takes a fence away again: a move abandoned. */
  unfence(): Promise<void>;
  /** Webhook deliveries claimed and job ticks leased, whose claims have not run out: work under way. */
  workUnderWay(): Promise<number>;
  /** Runs a statement: `?` for each parameter, `{now}` for the database's time. */
  run(sql: string, parameters: unknown[]): Promise<void>;
  close(): Promise<void>;
}

/** The name every trigger of a move's fence starts with. */
export const FENCE_TRIGGER = 'plant_store_fence';

/** Rows read from the database at once. */
export const READ_BATCH = 2_000;

/** `"name"` with its quotes doubled: every table and column name goes through it. */
export function quoteName(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

/** A value that its column's kind cannot hold, named where it is. */
export class UnreadableValueError extends Error {}

export function unreadable(
  table: string,
  column: ArchiveColumn,
  value: unknown,
): never {
  const shown =
    typeof value === 'bigint' ? String(value) : JSON.stringify(value);
  throw new UnreadableValueError(
    `${table}.${column.name} holds ${String(shown).slice(0, 80)}, which is no ${column.kind} value: correct or remove that row, then back it up again`,
  );
}

/**
 * The tables as an archive holds them, whichever engine they come from: each after the tables
 * it depends on (names break ties), and each table's columns by name, since the engines' orders
 * of a table's columns differ where migrations added them differently.
 */
export function inCanonicalOrder(given: StoreTable[]): StoreTable[] {
  const tables = given.map((table) => ({
    ...table,
    columns: [...table.columns].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    ),
  }));
  const byName = new Map(tables.map((table) => [table.table, table]));
  const ordered: StoreTable[] = [];
  const placed = new Set<string>();
  const visiting = new Set<string>();
  const place = (table: StoreTable) => {
    if (placed.has(table.table) || visiting.has(table.table)) return;
    visiting.add(table.table);
    for (const parent of [...table.dependsOn].sort()) {
      const found = byName.get(parent);
      if (found && found !== table) place(found);
    }
    visiting.delete(table.table);
    placed.add(table.table);
    ordered.push(table);
  };
  for (const table of [...tables].sort((a, b) =>
    a.table < b.table ? -1 : a.table > b.table ? 1 : 0,
  )) {
    place(table);
  }
  return ordered;
}

/** The value an int column holds as its canonical decimal string, exact to 64 bits. */
export function canonicalInt(value: unknown): string | undefined {
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'number' && Number.isSafeInteger(value)) {
    return String(value);
  }
  if (typeof value === 'string' && /^-?\d{1,19}$/.test(value)) {
    return BigInt(value).toString();
  }
  return undefined;
}

export type { CanonicalValue };
