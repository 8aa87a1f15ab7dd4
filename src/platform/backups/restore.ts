import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { resolve } from 'node:path';
import type { MigrationInterface } from 'typeorm';
import type { DatabaseConfig } from '../config/database.config';
import {
  createDataSourceOptions,
  ensureDatabaseFolder,
  migrationFiles,
} from '../database/data-source-options';
import { PortableDataSource } from '../database/portable-data-source';
import { ArchiveReader, type ArchiveEntry } from './archive-file';
import {
  migrationTimestamp,
  schemaVersion,
  type ArchiveHeader,
  type TableSummary,
} from './archive-format';
import {
  BackupRefusal,
  differences,
  openStore,
  summarize,
  verifyArchive,
} from './backups';
import { BOOKKEEPING_TABLES, type StoreTable } from './store-connection';

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
  fill: () => Promise<unknown>,
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
): Promise<Record<string, TableSummary>> {
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
    return expected;
  } catch (error) {
    await store.rollback().catch(() => undefined);
    throw error;
  } finally {
    await store.close();
  }
}
