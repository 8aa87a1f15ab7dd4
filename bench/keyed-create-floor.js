// @ts-check
// node bench/keyed-create-floor.js [--duration 5] [--rounds 3] [--relay-rtt 1]
//                                  [--postgres-url postgres://...]
// What a create with an Idempotency-Key can cost at best on PostgreSQL through node-postgres,
// the driver TypeORM uses, without the service: the statements of each way to store a plant
// and its key, sent as the service sends them (one statement per round trip), by 32 clients
// over a pool of 10 (DB_POOL_SIZE), in a database of its own. Shapes alternate within each
// round; the table gives each one's throughput as a ratio to the plain insert's (issue 50,
// item 3). A serialization failure, or a lock waited for past the SERIALIZABLE shapes'
// lock_timeout (55P03), rolls back and runs the shape again, as the service does.
// The pool is pipelined (pg's `pipeline: true`, as the service's is): a statement sent without
// awaiting the one before goes out behind it. `--relay-rtt N` puts bench/delay-relay.js in
// front of PostgreSQL. Statements with parameters run as named ones, as the service's do.
'use strict';
const { Pool } = require('pg');
const { option, postgresDatabase, textOption } = require('./built-service');
const { relayedUrl } = require('./delay-relay');

const ADMIN_URL = textOption('postgres-url') ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION_MS = option('duration', 5) * 1000;
const ROUNDS = option('rounds', 3);
const CLIENTS = 32;
const RELAY_RTT = option('relay-rtt', 0);

const INSERT_PLANT = 'INSERT INTO plants (id, name) VALUES ($1, $2)';
const CLAIM = 'INSERT INTO keys (key, lease) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING';
const RECORD = 'UPDATE keys SET answer = $2, lease = NULL WHERE key = $1 AND lease = $3';
const BEGIN_SERIALIZABLE = 'BEGIN ISOLATION LEVEL SERIALIZABLE; SET LOCAL lock_timeout = 10';
const BEGIN_READ_COMMITTED = 'BEGIN ISOLATION LEVEL READ COMMITTED';
// the service's closing UPDATE (transaction-runner.ts): fails when it changes no row
const RECORD_OR_FAIL = `WITH closing AS (${RECORD} RETURNING 1) SELECT 1 / count(*)::int FROM closing`;

/** Sent now, awaited later: pipelined behind whatever the client sends next. */
function sent(/** @type {import('pg').PoolClient} */ client, /** @type {string} */ sql, /** @type {unknown[]} */ values = []) {
  const answer = client.query(sql, values);
  answer.catch(() => undefined);
  return answer;
}
const ANSWER = '{"id":1,"name":"x"}';

/**
 * The claim: one statement, committed at once.
 * @param {import('pg').PoolClient} client @param {number} id
 */
const claimAlone = (client, id) => client.query(CLAIM, [`k${id}`, 'lease']);

/**
 * The claim in a transaction of its own that does not wait for the disk
 * (`synchronous_commit = off`), all of it written at once: one round trip. A crash may lose
 * it, but never once a later commit of the same connection has waited for the disk, which
 * flushes the log up to that commit, the claim's included.
 * @param {import('pg').PoolClient} client @param {number} id
 */
async function claimWithoutWaitingForDisk(client, id) {
  const begun = sent(client, 'BEGIN; SET LOCAL synchronous_commit = off');
  const claimed = sent(client, CLAIM, [`k${id}`, 'lease']);
  await client.query('COMMIT');
  await begun;
  await claimed;
}

/**
 * The claim; `begin` sent with the INSERT; then the answer, awaited before COMMIT or, with
 * `answerWithCommit`, made to fail when it changes no row and sent with COMMIT.
 * @param {string} begin
 * @param {boolean} answerWithCommit
 * @returns {(client: import('pg').PoolClient, id: number) => Promise<unknown>}
 */
function pipelinedKeyedCreate(begin, answerWithCommit, claim = claimAlone) {
  return async (client, id) => {
    await claim(client, id);
    const begun = sent(client, begin);
    await client.query(INSERT_PLANT, [id, 'x']);
    await begun;
    const answer = [`k${id}`, ANSWER, 'lease'];
    if (!answerWithCommit) {
      await client.query(RECORD, answer);
      await client.query('COMMIT');
      return;
    }
    const recorded = sent(client, RECORD_OR_FAIL, answer);
    await client.query('COMMIT');
    await recorded;
  };
}

/** @type {Record<string, (client: import('pg').PoolClient, id: number) => Promise<unknown>>} */
const SHAPES = {
  'plain create: INSERT (1 round trip, 1 commit)': (client, id) =>
    client.query(INSERT_PLANT, [id, 'x']),
  "the service's: claim; BEGIN; INSERT; record; COMMIT (5, 2 commits)": async (client, id) => {
    await client.query(CLAIM, [`k${id}`, 'lease']);
    await client.query(BEGIN_SERIALIZABLE);
    await client.query(INSERT_PLANT, [id, 'x']);
    await client.query(RECORD, [`k${id}`, ANSWER, 'lease']);
    await client.query('COMMIT');
  },
  'claim inside: BEGIN; claim; INSERT; record; COMMIT (5, 1 commit)': async (client, id) => {
    await client.query(BEGIN_SERIALIZABLE);
    await client.query(CLAIM, [`k${id}`, 'lease']);
    await client.query(INSERT_PLANT, [id, 'x']);
    await client.query(RECORD, [`k${id}`, ANSWER, 'lease']);
    await client.query('COMMIT');
  },
  "the service's, pipelined: claim; BEGIN with INSERT; record; COMMIT (4 round trips, 2 commits)":
    pipelinedKeyedCreate(BEGIN_SERIALIZABLE, false),
  "this build's: claim; BEGIN with INSERT; record with COMMIT (3, 2 commits)":
    pipelinedKeyedCreate(BEGIN_SERIALIZABLE, true),
  "this build's at READ COMMITTED (POST /plants) (3, 2 commits)":
    pipelinedKeyedCreate(BEGIN_READ_COMMITTED, true),
  "the same, the claim's commit not waiting for the disk (3, 2 commits, 1 waits)":
    pipelinedKeyedCreate(BEGIN_READ_COMMITTED, true, claimWithoutWaitingForDisk),
  'fewest generic: BEGIN; INSERT; key with answer; COMMIT (4, 1 commit)': async (client, id) => {
    await client.query('BEGIN');
    await client.query(INSERT_PLANT, [id, 'x']);
    await client.query('INSERT INTO keys (key, answer) VALUES ($1, $2)', [`k${id}`, ANSWER]);
    await client.query('COMMIT');
  },
  'one statement per route: WITH key INSERT plant (1, 1 commit)': (client, id) =>
    client.query(
      'WITH claim AS (INSERT INTO keys (key, answer) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING RETURNING key) ' +
        'INSERT INTO plants (id, name) SELECT $3, $4 WHERE EXISTS (SELECT FROM claim)',
      [`k${id}`, ANSWER, id, 'x'],
    ),
};

/** Statement names by text: each runs prepared once per connection, as the service's do. */
const names = new Map();

/**
 * `client`, its statements with parameters run as named ones, as the service runs them
 * (src/platform/database/named-statements.ts).
 * @param {import('pg').PoolClient} client
 * @returns {import('pg').PoolClient}
 */
function named(client) {
  return /** @type {import('pg').PoolClient} */ (
    /** @type {unknown} */ ({
      query: (/** @type {string} */ text, /** @type {unknown[] | undefined} */ values) => {
        if (!values || values.length === 0) return client.query(text);
        if (!names.has(text)) names.set(text, `floor_${names.size}`);
        return client.query({ name: names.get(text), text, values });
      },
    })
  );
}

async function main() {
  const database = postgresDatabase(ADMIN_URL, `plant_keyed_floor_${process.pid}`);
  const relay = RELAY_RTT > 0 ? await relayedUrl(database.url, RELAY_RTT) : undefined;
  const pool = new Pool({ connectionString: relay?.url ?? database.url, max: 10, pipeline: true });
  let nextId = 1;
  let retries = 0;
  /** @param {(client: import('pg').PoolClient, id: number) => Promise<unknown>} shape */
  async function measure(shape) {
    const end = Date.now() + DURATION_MS;
    let done = 0;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        while (Date.now() < end) {
          const client = await pool.connect();
          try {
            await shape(named(client), nextId++);
            done += 1;
          } catch (error) {
            const { code } = /** @type {{code?: string}} */ (error);
            if (code !== '40001' && code !== '55P03') throw error;
            retries += 1;
            await client.query('ROLLBACK');
          } finally {
            client.release();
          }
        }
      }),
    );
    return done / (DURATION_MS / 1000);
  }
  try {
    database.run('CREATE TABLE plants (id bigint PRIMARY KEY, name text NOT NULL)');
    database.run('CREATE TABLE keys (key text PRIMARY KEY, lease text, answer text)');
    /** @type {Record<string, number[]>} */
    const rates = {};
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [name, shape] of Object.entries(SHAPES)) {
        (rates[name] ??= []).push(await measure(shape));
      }
    }
    const total = (/** @type {number[]} */ list) => list.reduce((a, b) => a + b, 0);
    const plain = total(Object.values(rates)[0]);
    console.log(`keyed create floor on PostgreSQL${RELAY_RTT > 0 ? ` through a relay adding ${RELAY_RTT} ms a round trip` : ''}: ${ROUNDS} rounds of ${DURATION_MS / 1000} s, ${CLIENTS} clients, a pipelined pool of 10`);
    for (const [name, list] of Object.entries(rates)) {
      const perSecond = list.map((rate) => rate.toFixed(0)).join(' / ');
      console.log(`${(total(list) / plain).toFixed(2)} of plain  ${perSecond.padEnd(22)} per s  ${name}`);
    }
    console.log(`serialization failures and lock timeouts, each run again: ${retries}`);
  } finally {
    await pool.end();
    await relay?.close();
    database.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
