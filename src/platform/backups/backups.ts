import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import { packageVersion } from '../config/package-version';
import type { DatabaseConfig } from '../config/database.config';
import {
  ArchiveReader,
  ArchiveWriter,
  type ArchiveEntry,
} from './archive-file';
import {
  ARCHIVE_FORMAT,
  ARCHIVE_VERSION,
  schemaVersion,
  TableChecksum,
  type ArchiveHeader,
  type ArchiveTable,
  type TableSummary,
} from './archive-format';
import { PostgresStore } from './postgres-store';
import { SqliteStore } from './sqlite-store';
import type { StoreConnection, StoreTable } from './store-connection';

/** A refusal that names what is wrong and changed nothing. */
export class BackupRefusal extends Error {}

/** Opens the store DATABASE_URL names; `create` lets a SQLite file be made. */
export async function openStore(
  config: DatabaseConfig,
  purpose: string,
  { create = false } = {},
): Promise<StoreConnection> {
  if (config.engine === 'postgres') {
    return PostgresStore.connect(config.url, purpose);
  }
  if (config.sqlitePath === ':memory:') {
    throw new BackupRefusal(
      'DATABASE_URL=sqlite::memory: is no store another process can reach: name a file',
    );
  }
  return new SqliteStore(resolve(config.sqlitePath), { create });
}

export interface BackupReport {
  file: string;
  header: ArchiveHeader;
  tables: Record<string, TableSummary>;
  bytes: number;
  seconds: number;
}

/**
 * Writes the whole store into `file`, as one snapshot, while the service goes on serving
 * (docs/operations.md, "Backups and restores"). Every table is carried, a module's own
 * included, as the database describes it: no table needs code of its own.
 */
export async function backup(
  config: DatabaseConfig,
  file: string,
): Promise<BackupReport> {
  const started = performance.now();
  if (existsSync(file)) {
    throw new BackupRefusal(
      `${file} exists already: name a new file, or remove that one first`,
    );
  }
  const store = await openStore(config, 'backup');
  let writer: ArchiveWriter | undefined;
  try {
    await store.beginSnapshot();
    const migrations = await store.migrations();
    if (migrations === undefined) {
      throw new BackupRefusal(
        'the database holds no plant store (it has no migrations table): check DATABASE_URL',
      );
    }
    const header: ArchiveHeader = {
      format: ARCHIVE_FORMAT,
      version: ARCHIVE_VERSION,
      service: packageVersion(),
      engine: store.engine,
      takenAt: (await store.now()).toISOString(),
      migrations,
      schema: schemaVersion(migrations),
    };
    writer = await ArchiveWriter.create(file, header);
    for await (const entry of storeEntries(store)) {
      if (entry.kind === 'table') await writer.beginTable(entry.table);
      else if (entry.kind === 'rows') await writer.rows(entry.rows);
      else await writer.endTable();
    }
    const tables = await writer.finish();
    writer = undefined;
    return {
      file,
      header,
      tables,
      bytes: (await stat(file)).size,
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    await writer?.abort();
    await store.close();
  }
}

/**
 * The store's tables and rows, read in the snapshot the caller began, as an archive holds
 * them: what a backup writes and a move loads.
 */
export async function* storeEntries(
  store: StoreConnection,
): AsyncGenerator<ArchiveEntry> {
  for (const { table, columns } of await store.tables()) {
    const carried: ArchiveTable = { table, columns };
    const checksum = new TableChecksum();
    yield { kind: 'table', table: carried };
    for await (const rows of store.rows(carried)) {
      for (const row of rows) checksum.add(JSON.stringify(row));
      yield { kind: 'rows', table: carried, rows };
    }
    yield { kind: 'end', table: carried, summary: checksum.summary() };
  }
}

/** Reads the whole archive, checking every line and checksum; what it holds. */
export async function verifyArchive(file: string): Promise<{
  header: ArchiveHeader;
  tables: Record<string, TableSummary>;
}> {
  if (!existsSync(file)) {
    throw new BackupRefusal(`there is no archive at ${resolve(file)}`);
  }
  const reader = new ArchiveReader(file);
  for await (const entry of reader.entries()) void entry;
  return { header: reader.header!, tables: reader.manifest!.tables };
}

/** A table whose rows differ between an archive and a database, or that only one holds. */
export interface TableDifference {
  table: string;
  archive?: TableSummary;
  database?: TableSummary;
}

/** Each table's count and checksum as the store holds it now, read in one snapshot. */
export async function summarize(
  store: StoreConnection,
  tables: readonly StoreTable[],
): Promise<Record<string, TableSummary>> {
  const summaries: Record<string, TableSummary> = {};
  for (const table of tables) {
    const checksum = new TableChecksum();
    for await (const rows of store.rows(table)) {
      for (const row of rows) checksum.add(JSON.stringify(row));
    }
    summaries[table.table] = checksum.summary();
  }
  return summaries;
}

/** The tables whose counts or checksums differ, by name. */
export function differences(
  archive: Record<string, TableSummary>,
  database: Record<string, TableSummary>,
): TableDifference[] {
  const names = [
    ...new Set([...Object.keys(archive), ...Object.keys(database)]),
  ].sort();
  return names
    .filter(
      (table) =>
        archive[table]?.rows !== database[table]?.rows ||
        archive[table]?.checksum !== database[table]?.checksum,
    )
    .map((table) => ({
      table,
      archive: archive[table],
      database: database[table],
    }));
}

/** The archive checked whole, then compared table by table with the database as it is now. */
export async function verifyAgainst(
  file: string,
  config: DatabaseConfig,
): Promise<{
  header: ArchiveHeader;
  tables: Record<string, TableSummary>;
  differences: TableDifference[];
  migrations?: string[];
}> {
  const { header, tables } = await verifyArchive(file);
  const store = await openStore(config, 'verify');
  try {
    await store.beginSnapshot();
    const migrations = await store.migrations();
    const held = await summarize(store, await store.tables());
    return {
      header,
      tables,
      differences: differences(tables, held),
      migrations,
    };
  } finally {
    await store.close();
  }
}
