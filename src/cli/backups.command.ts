import { Command, InvalidArgumentError } from 'commander';
import { move, MOVE_WAIT_MS } from '../platform/backups/move';
import { parseDuration } from '../platform/config/setting-kinds';
import {
  backup,
  verifyAgainst,
  verifyArchive,
  type TableDifference,
} from '../platform/backups/backups';
import { restore } from '../platform/backups/restore';
import type { TableSummary } from '../platform/backups/archive-format';
import {
  describeDatabase,
  readDatabaseConfig,
  type DatabaseConfig,
} from '../platform/config/database.config';
import { formatTable, type CliOutput } from './cli-context';

function parseTarget(url: string): DatabaseConfig {
  try {
    return readDatabaseConfig({ DATABASE_URL: url });
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

function parseWait(text: string): number {
  const ms = parseDuration(text);
  if (ms === undefined) {
    throw new InvalidArgumentError('expected a duration such as 30s or 2m');
  }
  return ms;
}

const count = (value: number) => value.toLocaleString('en-US');

function totalRows(tables: Record<string, TableSummary>): number {
  return Object.values(tables).reduce((sum, { rows }) => sum + rows, 0);
}

function tableCounts(tables: Record<string, TableSummary>): string[] {
  return formatTable([
    ['TABLE', 'ROWS'],
    ...Object.entries(tables).map(([name, { rows }]) => [name, count(rows)]),
  ]);
}

function describeDifference({ table, archive, database }: TableDifference) {
  const side = (summary?: TableSummary) =>
    summary ? `${count(summary.rows)} rows` : 'no such table';
  const same = archive && database && archive.rows === database.rows;
  return `${table}: the archive ${side(archive)}, the database ${side(database)}${same ? ' (other values)' : ''}`;
}

/**
 * The store's archives (docs/operations.md, "Backups and restores"): `backup`, `restore` and
 * `verify`, on either engine, in either direction. `database` is DATABASE_URL's store.
 */
export function backupsCommands(
  output: CliOutput,
  database: () => DatabaseConfig,
  requireExisting: () => void,
): Command[] {
  const backupCommand = new Command('backup')
    .description(
      'write the whole store into FILE (readable by you only: it holds webhook secrets) as one snapshot, while the service serves',
    )
    .argument('<file>', 'the archive to write; it must not exist yet')
    .action(async (file: string) => {
      requireExisting();
      const report = await backup(database(), file);
      for (const line of tableCounts(report.tables)) output.out(line);
      output.out(
        `backed up ${Object.keys(report.tables).length} tables and ${count(totalRows(report.tables))} rows to ${file} (${count(report.bytes)} bytes) in ${report.seconds.toFixed(1)} s; the snapshot is of ${report.header.takenAt}`,
      );
    });

  const restoreCommand = new Command('restore')
    .description(
      "load an archive into DATABASE_URL's database: an empty one (a new SQLite file is made), or with --replace one that holds data",
    )
    .argument('<file>', 'the archive to load')
    .option(
      '--replace',
      'replace what the target holds (its schema must be the archive’s)',
      false,
    )
    .action(async (file: string, options: { replace: boolean }) => {
      const report = await restore(database(), file, options);
      for (const line of tableCounts(report.tables)) output.out(line);
      const migrated =
        report.migratedUp.length > 0
          ? `; then migrated it up by ${report.migratedUp.join(', ')}`
          : '';
      output.out(
        `restored ${Object.keys(report.tables).length} tables and ${count(totalRows(report.tables))} rows from ${file} (a ${report.header.engine} snapshot of ${report.header.takenAt}, release ${report.header.service}), checked against its manifest, in ${report.seconds.toFixed(1)} s${migrated}`,
      );
    });

  const verifyCommand = new Command('verify')
    .description(
      "check that an archive is whole; with --against, that DATABASE_URL's database holds the same rows",
    )
    .argument('<file>', 'the archive to check')
    .option('--against', "compare it with DATABASE_URL's database", false)
    .action(async (file: string, options: { against: boolean }) => {
      if (!options.against) {
        const { header, tables } = await verifyArchive(file);
        for (const line of tableCounts(tables)) output.out(line);
        output.out(
          `the archive is whole: ${Object.keys(tables).length} tables and ${count(totalRows(tables))} rows, a ${header.engine} snapshot of ${header.takenAt} by release ${header.service}, schema version ${header.schema}`,
        );
        return;
      }
      requireExisting();
      const result = await verifyAgainst(file, database());
      if (result.differences.length > 0) {
        for (const difference of result.differences) {
          output.out(describeDifference(difference));
        }
        throw new Error(
          `the database differs from the archive in ${result.differences.map(({ table }) => table).join(', ')}`,
        );
      }
      output.out(
        `the archive is whole, and the database holds the same rows: ${Object.keys(result.tables).length} tables and ${count(totalRows(result.tables))} rows`,
      );
    });

  const moveCommand = new Command('move')
    .description(
      "move the store from DATABASE_URL's database into the empty database --to names, checked; instances on the old one turn read-only",
    )
    .requiredOption(
      '--to <url>',
      'the database to move into: postgres://… or sqlite:<file that does not exist yet>',
      parseTarget,
    )
    .option(
      '--wait <duration>',
      'how long to wait for webhook deliveries and job ticks under way to end',
      parseWait,
      MOVE_WAIT_MS,
    )
    .action(async (options: { to: DatabaseConfig; wait: number }) => {
      requireExisting();
      const report = await move(database(), options.to, {
        waitMs: options.wait,
      });
      for (const line of tableCounts(report.tables)) output.out(line);
      const seconds = (ms: number) => (ms / 1000).toFixed(1);
      output.out(
        `moved ${Object.keys(report.tables).length} tables and ${count(totalRows(report.tables))} rows to ${describeDatabase(options.to)}, checked; writes were refused for ${seconds(report.writesRefusedMs)} s (${seconds(report.waitedMs)} s of it waiting for deliveries and job ticks under way). The old database's instances serve reads only: start the service with DATABASE_URL set to the new one`,
      );
    });

  return [backupCommand, restoreCommand, verifyCommand, moveCommand];
}
