import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { describeWhenReachable, probeService } from './external-service';

/**
 * Where the PostgreSQL suite runs: TEST_DATABASE_URL (an administrative URL; every test file
 * gets a fresh database created from it), or a local server on 127.0.0.1:5432 when one answers.
 */
export const POSTGRES_ADMIN_URL =
  process.env.TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * `describe` when PostgreSQL answers; otherwise the suite is skipped with the reason, except on
 * CI (CI=true), where a skipped PostgreSQL suite is a failure.
 */
export function describeWithPostgres(name: string, body: () => void): void {
  const problem = probeService(
    `const { Client } = require('pg');
     const client = new Client({ connectionString: process.argv[1], connectionTimeoutMillis: 2000 });
     client.connect().then(() => client.query('SELECT 1')).then(
       () => client.end().then(() => process.exit(0)),
       (error) => { console.error(error.message); process.exit(1); });`,
    POSTGRES_ADMIN_URL,
  );
  describeWhenReachable(
    {
      name: 'PostgreSQL',
      url: POSTGRES_ADMIN_URL,
      variable: 'TEST_DATABASE_URL',
      problem,
    },
    name,
    body,
  );
}

/**
 * How the databases the tests create are named: TEST_DATABASE_PREFIX and 12 random hex digits,
 * so that on a shared server they are told apart from others' and found to clean up.
 */
export function testDatabaseName(
  prefix = process.env.TEST_DATABASE_PREFIX ?? 'plant_store_test_',
): string {
  // a PostgreSQL name needs no quoting this way, and fits its 63 bytes with the suffix
  if (!/^[a-z_][a-z0-9_]{0,50}$/.test(prefix)) {
    throw new Error(
      `TEST_DATABASE_PREFIX must be up to 51 lowercase letters, digits and _, not starting with a digit, got ${JSON.stringify(prefix)}`,
    );
  }
  return `${prefix}${randomBytes(6).toString('hex')}`;
}

/** A new, empty database for one test file, and a way to drop it. */
export async function createTestDatabase(): Promise<{
  url: string;
  drop: () => Promise<void>;
}> {
  const name = testDatabaseName();
  const admin = new Client({ connectionString: POSTGRES_ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new Client({ connectionString: POSTGRES_ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
    },
  };
}
