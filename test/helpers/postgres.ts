import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';

/**
 * Where the PostgreSQL suite runs: TEST_DATABASE_URL (an administrative URL; every test file
 * gets a fresh database created from it), or a local server on 127.0.0.1:5432 when one answers.
 */
const ADMIN_URL =
  process.env.TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/postgres';

/** Why PostgreSQL cannot be used, or undefined when it answers; synchronous, for describe. */
function unreachableBecause(): string | undefined {
  const probe = spawnSync(
    process.execPath,
    [
      '-e',
      `const { Client } = require('pg');
       const client = new Client({ connectionString: process.argv[1], connectionTimeoutMillis: 2000 });
       client.connect().then(() => client.query('SELECT 1')).then(
         () => client.end().then(() => process.exit(0)),
         (error) => { console.error(error.message); process.exit(1); });`,
      ADMIN_URL,
    ],
    { encoding: 'utf8', timeout: 10_000 },
  );
  return probe.status === 0 ? undefined : probe.stderr.trim() || 'no answer';
}

/**
 * `describe` when PostgreSQL answers; otherwise the suite is skipped with the reason, except on
 * CI (CI=true), where a skipped PostgreSQL suite is a failure.
 */
export function describeWithPostgres(name: string, body: () => void): void {
  const problem = unreachableBecause();
  if (problem === undefined) {
    describe(name, body);
    return;
  }
  const reason = `PostgreSQL at ${new URL(ADMIN_URL).host} is not reachable (${problem})`;
  if (process.env.CI)
    throw new Error(`CI must run the PostgreSQL suite, but ${reason}`);
  console.warn(
    `Skipping "${name}": ${reason}; set TEST_DATABASE_URL to run it`,
  );
  describe.skip(name, body);
}

/** A new, empty database for one test file, and a way to drop it. */
export async function createTestDatabase(): Promise<{
  url: string;
  drop: () => Promise<void>;
}> {
  const name = `plant_store_test_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new Client({ connectionString: ADMIN_URL });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
    },
  };
}
