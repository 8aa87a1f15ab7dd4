import { hash } from 'node:crypto';

/**
 * A store's archive (docs/operations.md, "Backups and restores"): gzip-compressed lines of
 * JSON, written and read as a stream. First the header, then each table's description, its
 * rows (one array of canonical values each) and its end with count and checksum, then the
 * manifest, which repeats every table's count and checksum and closes with the SHA-256 of
 * every line before it. The same store gives the same rows and checksums from either engine.
 */
export const ARCHIVE_FORMAT = 'plant-store-archive';
export const ARCHIVE_VERSION = 1;

export interface ArchiveHeader {
  format: typeof ARCHIVE_FORMAT;
  version: number;
  /** The release that wrote it. */
  service: string;
  engine: 'sqlite' | 'postgres';
  /** The database's time when the snapshot was taken. */
  takenAt: string;
  /** The migrations applied to the store, oldest first; each engine has its own. */
  migrations: string[];
  /**
   * The schema's version, the same on both engines: the timestamp of the newest migration
   * applied. A schema change lands on both engines under one timestamp.
   */
  schema: number;
}

/** The timestamp a migration's name ends with (`SkippedEvents1795940000000`). */
export function migrationTimestamp(name: string): number {
  return Number(/(\d{13})$/.exec(name)?.[1] ?? 0);
}

/** The schema version of a store with these migrations applied. */
export function schemaVersion(migrations: readonly string[]): number {
  return Math.max(0, ...migrations.map(migrationTimestamp));
}

/**
 * How a column's values are written, whatever the engine stored them as: `int` a decimal
 * string (int64 exact), `time` ISO 8601 in UTC to the millisecond, `bool` true or false,
 * `bytes` base64, `real` a JSON number, `text` a string.
 */
export type ColumnKind = 'int' | 'real' | 'time' | 'bool' | 'bytes' | 'text';

export interface ArchiveColumn {
  name: string;
  kind: ColumnKind;
}

export interface ArchiveTable {
  table: string;
  columns: ArchiveColumn[];
}

export type CanonicalValue = string | number | boolean | null;
export type CanonicalRow = CanonicalValue[];

export interface TableSummary {
  rows: number;
  checksum: string;
}

export interface TableEnd extends TableSummary {
  end: string;
}

export interface ArchiveManifest {
  manifest: { tables: Record<string, TableSummary> };
  /** The SHA-256 of every line before this one, newlines included. */
  sha256: string;
}

/**
 * A table's checksum: the sum, modulo 2^256, of each canonical row's SHA-256. It does not
 * depend on the order rows are read in, which differs between engines (collations, physical
 * order), and it changes with any row added, lost or altered. The sum is kept in eight 32-bit
 * lanes, most significant first: a million rows' worth of BigInt arithmetic cost more than
 * their hashing.
 */
const LANE = 2 ** 32;

export class TableChecksum {
  private readonly lanes = new Array<number>(8).fill(0);
  rows = 0;

  add(line: string): void {
    const digest = hash('sha256', line, 'buffer');
    let carry = 0;
    for (let lane = 7; lane >= 0; lane -= 1) {
      const sum = this.lanes[lane] + digest.readUInt32BE(lane * 4) + carry;
      carry = Math.floor(sum / LANE);
      this.lanes[lane] = sum - carry * LANE;
    }
    this.rows += 1;
  }

  summary(): TableSummary {
    return {
      rows: this.rows,
      checksum: this.lanes
        .map((lane) => lane.toString(16).padStart(8, '0'))
        .join(''),
    };
  }
}

/** The column kind of a type SQLite declares, by its affinity rules and the names TypeORM uses. */
export function sqliteKind(declared: string): ColumnKind {
  const type = declared.toLowerCase();
  if (/bool/.test(type)) return 'bool';
  if (/date|time/.test(type)) return 'time';
  if (/int/.test(type)) return 'int';
  if (/blob/.test(type)) return 'bytes';
  if (/real|floa|doub/.test(type)) return 'real';
  return 'text';
}

/** The column kind of a PostgreSQL type, by its `udt_name`. */
export function postgresKind(udtName: string): ColumnKind {
  switch (udtName) {
    case 'int2':
    case 'int4':
    case 'int8':
      return 'int';
    case 'timestamptz':
    case 'timestamp':
    case 'date':
      return 'time';
    case 'bool':
      return 'bool';
    case 'bytea':
      return 'bytes';
    case 'float4':
    case 'float8':
      return 'real';
    default:
      return 'text';
  }
}

/** An archive, or a line of one, that cannot be read: `where` says which line. */
export class ArchiveError extends Error {}

/** A stored time: its date, its time of day, and its zone when it says one (UTC otherwise). */
const STORED_TIME =
  /^(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)(Z|[+-]\d{2}:\d{2})?$/;

/**
 * A time as SQLite stores it, as TypeORM and the triggers write it (`2026-12-05 09:30:00.123`,
 * UTC), or ISO 8601: never read in the machine's own zone.
 */
export function timeFromText(text: string): Date | undefined {
  const parts = STORED_TIME.exec(text);
  if (!parts) return undefined;
  const [, day, time, zone = 'Z'] = parts;
  const date = new Date(`${day}T${time}${zone}`);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
