import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { DataSource, type EntityMetadata } from 'typeorm';

/** How long readiness trusts the last look at the schema before it looks again. */
export const SCHEMA_RECHECK_MS = 10_000;

/** How long readiness waits for a look at the schema before it answers with the last verdict. */
const SCHEMA_LOOK_WAIT_MS = 200;

/** A column as the database describes it. */
interface StoredColumn {
  table: string;
  column: string;
  /** NOT NULL, with no default, not generated: an insert that leaves it out fails. */
  required: boolean;
}

/**
 * Whether this build's code can run on the schema it finds (docs/operations.md, "Upgrades").
 * TypeORM's entities read and write every column they map, so code fits a schema when every
 * table and column it maps exists, and every column it does not know may be left out of an
 * insert. A schema one release newer fits by the rule every migration keeps (expand, then
 * contract a release later); an older release on a schema that a contract step changed past it
 * does not, and says so at boot and in readiness (503) instead of answering 500s.
 */
@Injectable()
export class SchemaCompatibilityService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Schema');
  private problem: string | undefined;
  private checkedAt = 0;
  private checking?: Promise<string | undefined>;

  constructor(private readonly dataSource: DataSource) {}

  async onApplicationBootstrap(): Promise<void> {
    const unknown = await this.migrationsUnknownHere();
    const problem = await this.compare();
    if (unknown.length > 0) {
      const verdict =
        problem === undefined
          ? 'this build fits it and serves'
          : 'this build does not fit it';
      this.logger.warn(
        { unknownMigrations: unknown },
        `the schema is ahead of this build: ${unknown.length} migration${unknown.length === 1 ? '' : 's'} it does not know (${unknown.join(', ')}) ran on it; ${verdict}`,
      );
    }
    this.settle(problem);
  }

  /**
   * What keeps this build from running on the schema (a sentence for readiness's 503), or
   * undefined when it fits; looked at again once the last look is `maxAgeMs` old.
   */
  async problemNow(maxAgeMs = SCHEMA_RECHECK_MS): Promise<string | undefined> {
    if (Date.now() - this.checkedAt < maxAgeMs) return this.problem;
    // a slow look does not hold readiness up: the last verdict stands until it ends
    let timer: NodeJS.Timeout | undefined;
    const lastVerdict = new Promise<string | undefined>((resolve) => {
      timer = setTimeout(() => resolve(this.problem), SCHEMA_LOOK_WAIT_MS);
    });
    return Promise.race([this.check(), lastVerdict]).finally(() =>
      clearTimeout(timer),
    );
  }

  /** A statement failed as code on another schema fails: readiness looks again at once. */
  suspect(): void {
    this.checkedAt = 0;
  }

  private check(): Promise<string | undefined> {
    this.checking ??= this.compare()
      .then(
        (problem) => this.settle(problem),
        // the database could not be asked: readiness's own ping says why; the verdict stands
        () => this.problem,
      )
      .finally(() => (this.checking = undefined));
    return this.checking;
  }

  /** Keeps the verdict of a look at the schema; a misfit is logged when it is first seen. */
  private settle(problem: string | undefined): string | undefined {
    if (problem !== undefined && problem !== this.problem) {
      this.logger.error(problem);
    }
    this.problem = problem;
    this.checkedAt = Date.now();
    return problem;
  }

  private async compare(): Promise<string | undefined> {
    const entities = this.dataSource.entityMetadatas;
    const stored = await this.storedColumns(
      entities.map((entity) => entity.tablePath),
    );
    const problems = entities.flatMap((entity) =>
      this.misfitsOf(entity, stored),
    );
    return problems.length === 0
      ? undefined
      : `this build's code does not fit the database's schema, which another release migrated: ${problems.join('; ')}. Run the release that migrated it, or one that knows its schema (docs/operations.md, "Upgrades")`;
  }

  private misfitsOf(entity: EntityMetadata, stored: StoredColumn[]): string[] {
    const table = entity.tablePath;
    const columns = stored.filter((column) => column.table === table);
    if (columns.length === 0) return [`table ${table} does not exist`];
    const known = new Set(entity.columns.map((column) => column.databaseName));
    const missing = [...known]
      .filter((name) => !columns.some(({ column }) => column === name))
      .map((name) => `column ${table}.${name} does not exist`);
    // a view is only read; a table is also written, by inserts that name only known columns
    const unwritten =
      entity.tableType === 'view'
        ? []
        : columns
            .filter(({ column, required }) => required && !known.has(column))
            .map(
              ({ column }) =>
                `column ${table}.${column} is required (NOT NULL without a default) and this build does not write it`,
            );
    return [...missing, ...unwritten];
  }

  private async storedColumns(tables: string[]): Promise<StoredColumn[]> {
    if (this.dataSource.options.type === 'postgres') {
      const rows = await this.dataSource.query<Record<string, string | null>[]>(
        `SELECT table_name, column_name, is_nullable, column_default, is_generated, is_identity
         FROM information_schema.columns
         WHERE table_schema = current_schema() AND table_name = ANY($1)`,
        [tables],
      );
      return rows.map((row) => ({
        table: row.table_name!,
        column: row.column_name!,
        required:
          row.is_nullable === 'NO' &&
          row.column_default === null &&
          row.is_generated !== 'ALWAYS' &&
          row.is_identity !== 'YES',
      }));
    }
    const rows = await this.dataSource.query<Record<string, unknown>[]>(
      `SELECT m.name AS table_name, p.name AS column_name, p."notnull" AS not_null,
              p.dflt_value AS column_default, p.pk AS pk, p.type AS type
       FROM sqlite_master m JOIN pragma_table_info(m.name) p
       WHERE m.type IN ('table', 'view') AND m.name IN (${tables.map(() => '?').join(', ')})`,
      tables,
    );
    return rows.map((row) => ({
      table: String(row.table_name),
      column: String(row.column_name),
      // an INTEGER PRIMARY KEY is the rowid, which SQLite fills in
      required:
        Number(row.not_null) === 1 &&
        row.column_default === null &&
        !(Number(row.pk) > 0 && String(row.type).toUpperCase() === 'INTEGER'),
    }));
  }

  /** Migrations that ran on the database and that this build does not have. */
  private async migrationsUnknownHere(): Promise<string[]> {
    const table = this.dataSource.options.migrationsTableName ?? 'migrations';
    const known = new Set(
      this.dataSource.migrations.map(
        (migration) => migration.name ?? migration.constructor.name,
      ),
    );
    const applied = await this.dataSource.query<{ name: string }[]>(
      `SELECT name FROM ${this.dataSource.driver.escape(table)} ORDER BY id`,
    );
    return applied.map(({ name }) => name).filter((name) => !known.has(name));
  }
}
