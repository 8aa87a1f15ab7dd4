// @ts-check
// node bench/keyed-create-floor.js [--duration 5] [--rounds 3] [--postgres-url postgres://...]
// What a create with an Idempotency-Key can cost at best on PostgreSQL through node-postgres,
// the driver TypeORM uses, without the service: the statements of each way to store a plant
// and its key, sent as the service sends them (one statement per round trip), by 32 clients
// over a pool of 10 (DB_POOL_SIZE), in a database of its own. Shapes alternate within each
// round; the table gives each one's throughput as a ratio to the plain insert's (issue 50,
// item 3). A serialization failure rolls back and runs the shape again, as the service does.
'use strict';
const { Pool } = require('pg');
const { option, postgresDatabase, textOption } = require('./built-service');

const ADMIN_URL = textOption('postgres-url') ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const DURATION_MS = option('duration', 5) * 1000;
const ROUNDS = option('rounds', 3);
const CLIENTS = 32;

const INSERT_PLANT = 'INSERT INTO plants (id, name) VALUES ($1, $2)';
const CLAIM = 'INSERT INTO keys (key, lease) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING';
const RECORD = 'UPDATE keys SET answer = $2, lease = NULL WHERE key = $1 AND lease = $3';
const BEGIN_SERIALIZABLE = 'BEGIN ISOLATION LEVEL SERIALIZABLE; SET LOCAL lock_timeout = 10';
const ANSWER = '{"id":1,"name":"x"}';

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

async function main() {
  const database = postgresDatabase(ADMIN_URL, `plant_keyed_floor_${process.pid}`);
  const pool = new Pool({ connectionString: database.url, max: 10 });
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
            await shape(client, nextId++);
            done += 1;
          } catch (error) {
            if (/** @type {{code?: string}} */ (error).code !== '40001') throw error;
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
    console.log(`keyed create floor on PostgreSQL: ${ROUNDS} rounds of ${DURATION_MS / 1000} s, ${CLIENTS} clients, pool of 10`);
    for (const [name, list] of Object.entries(rates)) {
      const perSecond = list.map((rate) => rate.toFixed(0)).join(' / ');
      console.log(`${(total(list) / plain).toFixed(2)} of plain  ${perSecond.padEnd(22)} per s  ${name}`);
    }
    console.log(`serialization failures, each run again: ${retries}`);
  } finally {
    await pool.end();
    database.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
