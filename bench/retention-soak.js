// @ts-check
// npm run bench:retention [-- --duration 90 --workers 4 --report 10 --service-env KEY=VALUE,...]
//                          [--database postgres --postgres-url postgres://postgres@127.0.0.1:5432/postgres]
// Plants added and deleted without pause, each change an event delivered to a local receiver,
// for `duration` seconds: once with retention at 20 s (swept every 5 s) and once with it out of
// the way (1000 days). Every `report` seconds it prints the database's size on disk, its events
// and deliveries, and the POST latency of that window: with retention they stay flat. On
// PostgreSQL each run gets a database of its own on the server --postgres-url names, dropped
// after; its size is pg_database_size.
'use strict';
const Database = require('better-sqlite3');
const { randomBytes } = require('node:crypto');
const { statSync } = require('node:fs');
const { Client } = require('pg');
const { createServer } = require('node:http');
const { ROOT, cliToken, option, startBuiltService } = require('./built-service');

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

function sizeMb(file) {
  let bytes = 0;
  for (const suffix of ['', '-wal']) {
    try {
      bytes += statSync(file + suffix).size;
    } catch {
      // no WAL file yet
    }
  }
  return bytes / 1024 ** 2;
}

/** `--name value` from the command line as text, or the fallback. */
function textOption(name, fallback) {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? fallback : process.argv[index + 1];
}

/** What the report reads from the database: its size in MB and a table's rows. */
function sqliteReader(file) {
  const reader = new Database(file, { readonly: true });
  return {
    sizeMb: async () => sizeMb(file),
    count: async (table) => /** @type {{ n: number }} */ (reader.prepare(`SELECT count(*) AS n FROM ${table}`).get()).n,
    close: async () => reader.close(),
  };
}

async function postgresReader(url) {
  const reader = new Client({ connectionString: url });
  await reader.connect();
  return {
    sizeMb: async () =>
      Number((await reader.query('SELECT pg_database_size(current_database()) AS bytes')).rows[0].bytes) / 1024 ** 2,
    count: async (table) => Number((await reader.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n),
    close: () => reader.end(),
  };
}

/** A fresh database on the server of `adminUrl`: its URL, and a way to drop it. */
async function postgresDatabase(adminUrl) {
  const name = `plant_store_retention_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new Client({ connectionString: adminUrl });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
    },
  };
}

/** `--service-env KEY=VALUE[,KEY=VALUE...]`: settings of the service on top of the soak's. */
function serviceEnvOption() {
  const assignments = textOption('service-env', '').split(',').filter(Boolean);
  if (assignments.some((assignment) => !/^[A-Z_][A-Z0-9_]*=/.test(assignment)))
    throw new Error('--service-env is KEY=VALUE[,KEY=VALUE...]');
  return Object.fromEntries(
    assignments.map((assignment) => {
      const at = assignment.indexOf('=');
      return [assignment.slice(0, at), assignment.slice(at + 1)];
    }),
  );
}

async function run(label, retention, { duration, workers, reportSeconds, postgresUrl, serviceEnv }) {
  const postgres = postgresUrl ? await postgresDatabase(postgresUrl) : undefined;
  const receiver = createServer((request, response) => {
    request.resume();
    request.on('end', () => response.writeHead(204).end());
  });
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', () => resolve(undefined)));
  const receiverPort = /** @type {import('node:net').AddressInfo} */ (receiver.address()).port;
  let manager = '';
  let databaseFile = '';
  const { base, token, stop } = await startBuiltService(
    'retention',
    {
      RATE_LIMIT_PER_TOKEN: '1000000000',
      RATE_LIMIT_PER_ADDRESS: '1000000000',
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      EVENTS_RETENTION: retention,
      RETENTION_INTERVAL: '5s',
      LOG_LEVEL: 'error',
      ...(postgres && { DATABASE_URL: postgres.url }),
      ...serviceEnv,
    },
    {
      prepare: (file, env) => {
        databaseFile = file;
        manager = cliToken(env, { name: 'manager', scopes: 'webhooks:manage', root: ROOT });
      },
    },
  );
  const reader = postgres ? await postgresReader(postgres.url) : sqliteReader(databaseFile);
  try {
    const subscribed = await fetch(`${base}/webhooks/subscriptions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${manager}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${receiverPort}/hook` }),
    });
    if (subscribed.status !== 201) throw new Error(`subscribe answered ${subscribed.status}`);
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const started = Date.now();
    const end = started + duration * 1000;
    let window = [];
    let nextId = 1;
    const worker = async () => {
      while (Date.now() < end) {
        const id = nextId++;
        const before = performance.now();
        const created = await fetch(`${base}/plants`, { method: 'POST', headers: auth, body: `{"id":${id},"name":"Kept?"}` });
        window.push(performance.now() - before);
        if (!created.ok) throw new Error(`create answered ${created.status}`);
        await fetch(`${base}/plants/${id}`, { method: 'DELETE', headers: auth });
      }
    };
    console.log(`${label}: EVENTS_RETENTION=${retention}`);
    console.log('  s   DB MB  events  deliveries  pending  POST p50 ms  p99 ms');
    let reporting = Promise.resolve();
    const printLine = async () => {
      const latencies = window.sort((a, b) => a - b);
      window = [];
      const seconds = Math.round((Date.now() - started) / 1000);
      // one after the other: a pg client runs one query at a time
      const size = await reader.sizeMb();
      const events = await reader.count('events');
      const deliveries = await reader.count('webhook_deliveries');
      const pending = await reader.count(`webhook_deliveries WHERE status = 'pending'`);
      console.log(
        [
          String(seconds).padStart(4),
          size.toFixed(1).padStart(7),
          String(events).padStart(7),
          String(deliveries).padStart(11),
          String(pending).padStart(8),
          percentile(latencies, 50).toFixed(1).padStart(12),
          percentile(latencies, 99).toFixed(1).padStart(7),
        ].join(' '),
      );
    };
    const report = setInterval(() => {
      reporting = reporting.then(printLine);
    }, reportSeconds * 1000);
    await Promise.all(Array.from({ length: workers }, worker));
    clearInterval(report);
    await reporting;
  } finally {
    await reader.close();
    await stop();
    receiver.close();
    await postgres?.drop();
  }
}

async function main() {
  const database = textOption('database', 'sqlite');
  if (database !== 'sqlite' && database !== 'postgres') throw new Error('--database is sqlite or postgres');
  const settings = {
    duration: option('duration', 90),
    workers: option('workers', 4),
    reportSeconds: option('report', 10),
    serviceEnv: serviceEnvOption(),
    postgresUrl:
      database === 'postgres' ? textOption('postgres-url', 'postgres://postgres@127.0.0.1:5432/postgres') : undefined,
  };
  console.log(`${database === 'postgres' ? 'PostgreSQL' : 'SQLite'}, ${settings.workers} workers, ${settings.duration} s a run`);
  if (settings.postgresUrl) {
    const server = new Client({ connectionString: settings.postgresUrl });
    await server.connect();
    const { autovacuum } = (await server.query('SHOW autovacuum')).rows[0];
    await server.end();
    // a test server may run without it; then no dead row is reclaimed and the sizes grow
    console.log(`autovacuum on this server: ${autovacuum}`);
  }
  await run('with retention', '20s', settings);
  await run('without', '1000d', settings);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
