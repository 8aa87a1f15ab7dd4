import { existsSync } from 'node:fs';
import { rm, stat } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { MigrationInterface } from 'typeorm';
import { packageVersion } from '../config/package-version';
import type { DatabaseConfig } from '../config/database.config';
import {
  createDataSourceOptions,
  ensureDatabaseFolder,
  migrationFiles,
} from '../database/data-source-options';
import { PortableDataSource } from '../database/portable-data-source';
import {
  ArchiveReader,
  ArchiveWriter,
  type ArchiveEntry,
} from './archive-file';
import {
  ARCHIVE_FORMAT,
  ARCHIVE_VERSION,
  migrationTimestamp,
  schemaVersion,
  TableChecksum,
  type ArchiveHeader,
  type ArchiveTable,
  type TableSummary,
} from './archive-format';
import { PostgresStore } from './postgres-store';
import { SqliteStore } from './sqlite-store';
import {
  BOOKKEEPING_TABLES,
  type StoreConnection,
  type StoreTable,
} from './store-connection';

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
async function summarize(
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

/** The migrations this build has for an engine, by name, oldest first. */
async function buildMigrations(
  engine: 'sqlite' | 'postgres',
): Promise<string[]> {
  const modules = await Promise.all(
    migrationFiles(engine).map(
      (file) => import(file) as Promise<Record<string, unknown>>,
    ),
  );
  return modules
    .flatMap((exports) =>
      Object.values(exports).filter(
        (exported): exported is new () => MigrationInterface =>
          typeof exported === 'function' &&
          typeof (exported.prototype as Partial<MigrationInterface>)?.up ===
            'function',
      ),
    )
    .map((Migration) => new Migration().name ?? Migration.name)
    .sort((a, b) => migrationTimestamp(a) - migrationTimestamp(b));
}

/**
 * Gives the store DATABASE_URL names the schema of `migrations` (a subset of the build's), or
 * every migration of the build when `migrations` is undefined.
 */
export async function migrate(
  config: DatabaseConfig,
  migrations?: readonly string[],
): Promise<void> {
  ensureDatabaseFolder(config);
  const dataSource = new PortableDataSource({
    ...createDataSourceOptions(config),
    migrationsRun: false,
    logging: false,
  });
  await dataSource.initialize();
  try {
    if (migrations) {
      const wanted = new Set(migrations);
      const kept = dataSource.migrations.filter((migration) =>
        wanted.has(migration.name ?? migration.constructor.name),
      );
      dataSource.migrations.splice(0, dataSource.migrations.length, ...kept);
    }
    await dataSource.runMigrations();
  } finally {
    await dataSource.destroy();
  }
}

export interface RestoreReport {
  header: ArchiveHeader;
  tables: Record<string, TableSummary>;
  /** The build's migrations applied after the archive's rows were loaded. */
  migratedUp: string[];
  seconds: number;
}

/**
 * Loads an archive into the store DATABASE_URL names (docs/operations.md, "Backups and
 * restores"). The archive is read whole and checked first, and the target's schema and rows
 * looked at, so that a refusal changes nothing. The rows are then loaded in one transaction,
 * with the target's triggers off, sequences set past them, and their checksums read back
 * against the manifest before it commits. An archive of an older schema is loaded into that
 * schema and migrated up after.
 */
export async function restore(
  config: DatabaseConfig,
  file: string,
  { replace = false } = {},
): Promise<RestoreReport> {
  const started = performance.now();
  const { header, tables: manifest } = await verifyArchive(file);
  const migratedUp = await intoTarget(
    config,
    header,
    { replace, purpose: 'restore' },
    () => {
      const reader = new ArchiveReader(file);
      return load(config, reader.entries(), header.service);
    },
  );
  return {
    header,
    tables: manifest,
    migratedUp,
    seconds: (performance.now() - started) / 1000,
  };
}

/**
 * Gives the target the schema of `from` (the target engine's migrations up to its version),
 * has `fill` load it, then migrates it up to this build's schema; what was migrated up. A
 * SQLite file this made is removed whole when anything fails: as if it had never run.
 */
export async function intoTarget(
  config: DatabaseConfig,
  from: Pick<ArchiveHeader, 'schema' | 'migrations' | 'service'>,
  { replace, purpose }: { replace: boolean; purpose: 'move' | 'restore' },
  fill: () => Promise<void>,
): Promise<string[]> {
  const known = await checkTarget(config, from, { replace, purpose });
  const upToSource = known.filter(
    (name) => migrationTimestamp(name) <= from.schema,
  );
  const sqliteFile =
    config.engine === 'sqlite' ? resolve(config.sqlitePath) : undefined;
  const created = sqliteFile !== undefined && !existsSync(sqliteFile);
  try {
    await migrate(config, upToSource);
    await fill();
  } catch (error) {
    if (created) {
      for (const suffix of ['', '-wal', '-shm', '-journal']) {
        await rm(`${sqliteFile}${suffix}`, { force: true });
      }
    }
    throw error;
  }
  const migratedUp = known.filter((name) => !upToSource.includes(name));
  if (migratedUp.length > 0) await migrate(config);
  return migratedUp;
}

/**
 * Refuses, changing nothing, a store of a schema newer than this build's, or a target that
 * would not take it; this build's migrations for the target's engine.
 */
export async function checkTarget(
  config: DatabaseConfig,
  from: Pick<ArchiveHeader, 'schema' | 'migrations' | 'service'>,
  { replace, purpose }: { replace: boolean; purpose: 'move' | 'restore' },
): Promise<string[]> {
  const known = await buildMigrations(config.engine);
  if (from.schema > schemaVersion(known)) {
    const whose = purpose === 'move' ? "source's" : "archive's";
    throw new BackupRefusal(
      `the ${whose} schema (version ${from.schema}, ${from.migrations.at(-1)}) is newer than this build knows (${schemaVersion(known)}): ${purpose} it with release ${from.service} or a newer one`,
    );
  }
  await refuseUnfitTarget(config, from, replace);
  return known;
}

/** Refuses a target that holds data (unless `replace`), or whose schema is not the archive's. */
async function refuseUnfitTarget(
  config: DatabaseConfig,
  header: Pick<ArchiveHeader, 'schema' | 'migrations'>,
  replace: boolean,
): Promise<void> {
  if (config.engine === 'sqlite' && !existsSync(resolve(config.sqlitePath))) {
    return;
  }
  const store = await openStore(config, 'restore');
  try {
    const migrations = await store.migrations();
    const tables = await store.tables();
    const holding: string[] = [];
    for (const { table } of tables) {
      if (BOOKKEEPING_TABLES.has(table)) continue;
      if (await store.hasRows(table)) holding.push(table);
    }
    if (holding.length > 0 && !replace) {
      throw new BackupRefusal(
        `the target database holds data (in ${holding.join(', ')}): restore into an empty database, or add --replace to replace what it holds`,
      );
    }
    if (migrations === undefined) {
      if (tables.length > 0) {
        throw new BackupRefusal(
          `the target database holds tables of something else (${tables.map(({ table }) => table).join(', ')}) and no plant store: restore into an empty database`,
        );
      }
      return;
    }
    if (schemaVersion(migrations) !== header.schema) {
      throw new BackupRefusal(
        `the target's schema (${describeHead(migrations)}) is not the archive's (${describeHead(header.migrations)}): restore into an empty database, a new PostgreSQL database or a SQLite file that does not exist yet`,
      );
    }
  } finally {
    await store.close();
  }
}

function describeHead(migrations: readonly string[]): string {
  return migrations.length === 0
    ? 'no migrations'
    : `version ${schemaVersion(migrations)}, ${migrations.at(-1)}`;
}

/**
 * Rows, as an archive holds them, into the target, in one transaction checked before it
 * commits: each table's rows read back against the count and checksum its end gave.
 */
export async function load(
  config: DatabaseConfig,
  entries: AsyncIterable<ArchiveEntry>,
  service: string,
): Promise<void> {
  const store = await openStore(config, 'restore');
  try {
    const tables = await store.tables();
    const byName = new Map(tables.map((table) => [table.table, table]));
    await store.beginLoad(tables);
    // children before their parents; what it held is the archive's to replace (--replace), or
    // what the service wrote by itself on the target before: a start, the migrations' seeds
    for (const { table } of [...tables].reverse()) await store.clear(table);
    const loaded: StoreTable[] = [];
    const expected: Record<string, TableSummary> = {};
    for await (const entry of entries) {
      if (entry.kind === 'table') {
        const target = byName.get(entry.table.table);
        const missing = target
          ? entry.table.columns.filter(
              ({ name }) =>
                !target.columns.some((column) => column.name === name),
            )
          : [];
        if (!target || missing.length > 0) {
          throw new BackupRefusal(
            `the store holds ${target ? `columns ${missing.map(({ name }) => name).join(', ')} of table ${entry.table.table}` : `table ${entry.table.table}`}, which this build's schema has not: use the release that wrote it (${service})`,
          );
        }
        loaded.push({ ...entry.table, dependsOn: target.dependsOn });
      } else if (entry.kind === 'rows') {
        await store.insert(entry.table, entry.rows);
      } else {
        expected[entry.table.table] = entry.summary;
      }
    }
    await store.resetSequences(loaded);
    const held = await summarize(store, loaded);
    const wrong = differences(expected, held);
    if (wrong.length > 0) {
      throw new Error(
        `the rows loaded differ from the source's in ${wrong.map(({ table }) => table).join(', ')}: nothing was loaded`,
      );
    }
    await store.commit();
  } catch (error) {
    await store.rollback().catch(() => undefined);
    throw error;
  } finally {
    await store.close();
  }
}
