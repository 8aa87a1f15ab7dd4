// @ts-check
'use strict';
/**
 * Run in a process of its own by migrations.js: asks TypeORM what the new entity adds to each
 * engine's schema, the way `typeorm migration:generate` does, and prints the migrations as
 * JSON. Each engine starts from an empty database of its own (a temporary SQLite file; a
 * PostgreSQL database made for the run and dropped after it), brought up to date with the
 * project's own migrations, so the difference is the new entity's alone.
 *
 * Input (argv[2], JSON): { root, entityFile, migrationName, timestamp, postgresUrl,
 * postgresDatabase, replacesEntity?, addsColumn?, dropsColumn? }: a field added to or dropped
 * from an entity replaces its file, and names the column it adds or drops.
 */
const { mkdtempSync, readdirSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const input = JSON.parse(process.argv[2]);
const { root } = input;
const fromProject = (/** @type {string} */ id) =>
  require(require.resolve(id, { paths: [root] }));

// the project's TypeScript, compiled by SWC with its tsconfig.json's options as it is required
fromProject('@swc-node/register/register').register(
  fromProject('@swc-node/register/read-default-tsconfig').readDefaultTsConfig(
    join(root, 'tsconfig.json'),
  ),
);
fromProject('reflect-metadata');
const { Client } = fromProject('pg');
const { MigrationGenerateCommand } = require(
  require.resolve('typeorm/commands/MigrationGenerateCommand', {
    paths: [root],
  }),
);
const { readDatabaseConfig } = require(
  join(root, 'src/platform/config/database.config'),
);
const { createDataSourceOptions } = require(
  join(root, 'src/platform/database/data-source-options'),
);
const { PortableDataSource } = require(
  join(root, 'src/platform/database/portable-data-source'),
);

/** The migration file TypeORM's `migration:generate` writes for this schema difference. */
function migrationFile({ upQueries, downQueries }) {
  const line = ({ query, parameters }) =>
    '        await queryRunner.query(`' +
    MigrationGenerateCommand.escapeTemplateLiteral(query) +
    '`' +
    MigrationGenerateCommand.queryParams(parameters) +
    ');';
  return MigrationGenerateCommand.getTemplate(
    input.migrationName,
    input.timestamp,
    upQueries.map(line),
    downQueries.map(line).reverse(),
  );
}

/**
 * The project's entity files, less the one the new entity replaces (a field added to it):
 * two entities of one table would not be told apart.
 */
function projectEntities() {
  const replaced = input.replacesEntity && join(root, input.replacesEntity);
  return readdirSync(join(root, 'src'), {
    recursive: true,
    withFileTypes: true,
  })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.entity.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((file) => file !== replaced);
}

/**
 * SQLite's migration of a column added to a table: TypeORM rebuilds the table (a copy, a
 * drop, a rename), where SQLite adds a nullable column, or one with a default, in place
 * without touching a row. The column is read from the copy's definition.
 */
function addedInPlace({ upQueries }) {
  const copy = upQueries
    .map(({ query }) =>
      /^CREATE TABLE "temporary_(\w+)" \((.*)\)$/s.exec(query),
    )
    .find(Boolean);
  if (!copy) return undefined;
  const [, table, definitions] = copy;
  const definition = splitDefinitions(definitions).find((column) =>
    column.startsWith(`"${input.addsColumn}" `),
  );
  if (!definition) return undefined;
  return {
    upQueries: [{ query: `ALTER TABLE "${table}" ADD COLUMN ${definition}` }],
    downQueries: [
      { query: `ALTER TABLE "${table}" DROP COLUMN "${input.addsColumn}"` },
    ],
  };
}

/**
 * SQLite's migration of a column dropped from a table: TypeORM rebuilds the table, where
 * SQLite (3.35 and later) drops a column in place unless a key or an index names it. A column
 * whose own definition holds a key is left to the rebuild; an index on it is not looked for
 * (the field commands make none). Down adds it back as the table had it, read from the
 * rebuild's own down.
 */
function droppedInPlace({ downQueries }) {
  const original = downQueries
    .map(({ query }) =>
      /^CREATE TABLE "(?!temporary_)(\w+)" \((.*)\)$/s.exec(query),
    )
    .find(Boolean);
  if (!original) return undefined;
  const [, table, definitions] = original;
  const column = `"${input.dropsColumn}"`;
  const definition = splitDefinitions(definitions).find((part) =>
    part.startsWith(`${column} `),
  );
  // a column a constraint of the table names is dropped only by a rebuild
  if (!definition || /PRIMARY KEY|UNIQUE|REFERENCES/i.test(definition)) {
    return undefined;
  }
  return {
    upQueries: [{ query: `ALTER TABLE "${table}" DROP COLUMN ${column}` }],
    downQueries: [{ query: `ALTER TABLE "${table}" ADD COLUMN ${definition}` }],
  };
}

/** A CREATE TABLE's definitions, split at the commas outside parentheses and quotes. */
function splitDefinitions(text) {
  const parts = [];
  let depth = 0;
  let quote = '';
  let start = 0;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index];
    if (quote) {
      if (char === quote) quote = '';
    } else if (char === "'" || char === '"') quote = char;
    else if (char === '(') depth += 1;
    else if (char === ')') depth -= 1;
    else if (char === ',' && depth === 0) {
      parts.push(text.slice(start, index).trim());
      start = index + 1;
    }
  }
  parts.push(text.slice(start).trim());
  return parts;
}

async function schemaDifference(databaseUrl) {
  const dataSource = new PortableDataSource({
    ...createDataSourceOptions(
      readDatabaseConfig({ DATABASE_URL: databaseUrl }),
      {
        exactIntegers: false,
      },
    ),
    entities: [...projectEntities(), input.entityFile],
    migrationsRun: false,
    logging: false,
  });
  await dataSource.initialize();
  try {
    await dataSource.runMigrations();
    return await dataSource.driver.createSchemaBuilder().log();
  } finally {
    await dataSource.destroy();
  }
}

async function sqlite() {
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-generate-'));
  try {
    return await schemaDifference(`sqlite:${join(folder, 'schema.db')}`);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

async function postgres() {
  const admin = new Client({
    connectionString: input.postgresUrl,
    connectionTimeoutMillis: 5000,
  });
  try {
    await admin.connect();
  } catch (error) {
    throw new Error(
      `cannot generate the PostgreSQL migration: no PostgreSQL server answers at ${new URL(input.postgresUrl).host} (${error.message}); start one, or name one with GENERATOR_DATABASE_URL`,
    );
  }
  const database = input.postgresDatabase;
  try {
    await admin.query(`CREATE DATABASE "${database}"`);
    const url = new URL(input.postgresUrl);
    url.pathname = `/${database}`;
    try {
      return await schemaDifference(url.toString());
    } finally {
      await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    }
  } finally {
    await admin.end();
  }
}

async function main() {
  const migrations = {};
  for (const [engine, difference] of [
    ['sqlite', sqlite],
    ['postgres', postgres],
  ]) {
    let sql = await difference();
    if (engine === 'sqlite' && input.addsColumn) {
      sql = addedInPlace(sql) ?? sql;
    }
    if (engine === 'sqlite' && input.dropsColumn) {
      sql = droppedInPlace(sql) ?? sql;
    }
    if (sql.upQueries.length === 0) {
      throw new Error(
        input.dropsColumn
          ? `TypeORM finds nothing to drop from the ${engine} schema: is the column ${input.dropsColumn} gone already?`
          : `TypeORM finds nothing to add to the ${engine} schema for the new entity: is its table already there?`,
      );
    }
    migrations[engine] = migrationFile(sql);
  }
  process.stdout.write(JSON.stringify(migrations));
}

main().then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  },
);
