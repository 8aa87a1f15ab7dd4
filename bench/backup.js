// Backups, restores and moves of a large store (docs/operations.md, "Backups and restores"):
// `node bench/backup.js [--plants 1000000] [--events 100000] [--heap MB]` after `npm run build`, with
// PostgreSQL at TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres). Prints
// each step's time, throughput and the CLI's peak RSS, and creates' p99 at 32 connections
// without and beside a backup. Figures: bench/README.md, "Issue 59".
'use strict';
const { spawn, spawnSync } = require('node:child_process');
const {
  existsSync,
  mkdtempSync,
  rmSync,
  statSync,
  writeFileSync,
} = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { randomBytes } = require('node:crypto');
const autocannon = require('autocannon');
const Database = require('better-sqlite3');
const { Client } = require('pg');

const ROOT = join(__dirname, '..');
const CLI = join(ROOT, 'dist', 'cli.js');
const MAIN = join(ROOT, 'dist', 'main.js');
const ADMIN =
  process.env.TEST_DATABASE_URL ??
  'postgres://postgres@127.0.0.1:5432/postgres';
const arg = (name, fallback) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : fallback;
};
const PLANTS = arg('plants', 1_000_000);
const EVENTS = arg('events', 100_000);
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
// `--heap 64`: the CLI's V8 heap capped, to show that its memory does not grow with the store
const HEAP_MB = arg('heap', undefined);

/** Runs the CLI; its wall time in s and, where /usr/bin/time is, its peak RSS in MB. */
function cli(databaseUrl, ...args) {
  const command = TIME
    ? [TIME, '-f', 'rss_kb=%M', process.execPath, CLI, ...args]
    : [process.execPath, CLI, ...args];
  const started = process.hrtime.bigint();
  const run = spawnSync(command[0], command.slice(1), {
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: databaseUrl,
      ...(HEAP_MB && { NODE_OPTIONS: `--max-old-space-size=${HEAP_MB}` }),
    },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  if (run.status !== 0)
    throw new Error(`${args.join(' ')} failed:\n${run.stderr}`);
  const rss = /rss_kb=(\d+)/.exec(run.stderr);
  return {
    seconds,
    rssMb: rss ? Math.round(Number(rss[1]) / 1024) : undefined,
    lastLine: run.stdout.trimEnd().split('\n').at(-1),
  };
}

async function postgresDatabase() {
  const name = `plant_store_bench_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: ADMIN });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const client = new Client({ connectionString: ADMIN });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
    },
  };
}

/** A migrated SQLite store with PLANTS plants and EVENTS events, written directly. */
function fillSqlite(file) {
  writeFileSync(file, '');
  cli(`sqlite:${file}`, 'tokens', 'create', '--name', 'bench');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  const plant = db.prepare(
    'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)',
  );
  const event = db.prepare(
    "INSERT INTO events (id, type, payload, created_at, seq) VALUES (?, 'plant.added', ?, strftime('%Y-%m-%d %H:%M:%f', 'now'), ?)",
  );
  db.transaction(() => {
    for (let id = 1; id <= PLANTS; id += 1) {
      plant.run(id, `Plant ${id}`, id % 3 === 0 ? `tag-${id % 1000}` : null);
    }
    for (let seq = 1; seq <= EVENTS; seq += 1) {
      event.run(
        `evt_${seq.toString(16).padStart(32, '0')}`,
        JSON.stringify({ id: seq, name: `Plant ${seq}`, tag: null }),
        seq,
      );
    }
    db.prepare('UPDATE event_log SET last_seq = ? WHERE id = 1').run(EVENTS);
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

async function p99OfCreates(baseUrl, token, during) {
  let next = 10_000_000_000 + Math.floor(Math.random() * 1e9);
  const run = autocannon({
    url: `${baseUrl}/plants`,
    connections: 32,
    duration: 6,
    requests: [
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
        },
        setupRequest: (request) => ({
          ...request,
          body: `{"id":${(next += 1)},"name":"Fern"}`,
        }),
      },
    ],
  });
  const beside = during
    ? new Promise((resolve) => setTimeout(resolve, 500)).then(during)
    : undefined;
  const result = await run;
  const besideResult = await beside;
  return {
    p99: result.latency.p99,
    rps: Math.round(result.requests.average),
    non2xx: result.non2xx,
    beside: besideResult,
  };
}

/** Creates' p99 at 32 connections on the store at `url`, alone and beside a backup of it. */
async function createsBesideABackup(engine, url, folder) {
  const token = cli(url, 'tokens', 'create', '--name', 'load').lastLine;
  const port = 30_000 + Math.floor(Math.random() * 20_000);
  const service = spawn(process.execPath, [MAIN], {
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: url,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'silent',
      RATE_LIMIT_PER_TOKEN: '1000000000',
      RATE_LIMIT_PER_ADDRESS: '1000000000',
    },
    stdio: 'ignore',
  });
  try {
    const baseUrl = `http://127.0.0.1:${port}`;
    for (let tries = 0; ; tries += 1) {
      try {
        if ((await fetch(`${baseUrl}/health/live`)).ok) break;
      } catch {
        if (tries > 200) throw new Error('the service did not start');
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const alone = await p99OfCreates(baseUrl, token);
    const archive = join(folder, `beside-${engine}.archive`);
    const beside = await p99OfCreates(
      baseUrl,
      token,
      () =>
        new Promise((resolve) => {
          const started = Date.now();
          const child = spawn(process.execPath, [CLI, 'backup', archive], {
            env: { PATH: process.env.PATH, DATABASE_URL: url },
            stdio: 'ignore',
          });
          child.on('exit', (code) =>
            resolve({ code, seconds: (Date.now() - started) / 1000 }),
          );
        }),
    );
    console.log(
      `creates at 32 connections, ${engine}: p99 ${alone.p99} ms alone (${alone.rps} req/s), ${beside.p99} ms beside a backup (${beside.rps} req/s; the backup took ${beside.beside.seconds.toFixed(1)} s, exit ${beside.beside.code})`,
    );
  } finally {
    service.kill('SIGTERM');
    await new Promise((resolve) => service.once('exit', resolve));
  }
}

async function main() {
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-bench-backup-'));
  const dropped = [];
  try {
    const source = join(folder, 'source.sqlite');
    console.log(
      `filling a SQLite store with ${PLANTS.toLocaleString('en-US')} plants and ${EVENTS.toLocaleString('en-US')} events`,
    );
    fillSqlite(source);
    const rows = PLANTS + EVENTS;
    const report = (step, { seconds, rssMb }, extra = '') =>
      console.log(
        `${step.padEnd(34)} ${seconds.toFixed(1).padStart(6)} s  ${Math.round(
          rows / seconds,
        )
          .toLocaleString('en-US')
          .padStart(9)} rows/s  peak RSS ${rssMb ?? 'n/a'} MB${extra}`,
      );

    const fromSqlite = join(folder, 'from-sqlite.archive');
    const backup = cli(`sqlite:${source}`, 'backup', fromSqlite);
    report(
      'backup, SQLite',
      backup,
      `  archive ${(statSync(fromSqlite).size / 1e6).toFixed(1)} MB`,
    );

    const pg = await postgresDatabase();
    dropped.push(pg);
    report('restore into PostgreSQL', cli(pg.url, 'restore', fromSqlite));
    report(
      'verify --against PostgreSQL',
      cli(pg.url, 'verify', fromSqlite, '--against'),
    );
    const fromPostgres = join(folder, 'from-postgres.archive');
    report('backup, PostgreSQL', cli(pg.url, 'backup', fromPostgres));
    report(
      'restore into a new SQLite file',
      cli(`sqlite:${join(folder, 'back.sqlite')}`, 'restore', fromPostgres),
    );

    const moveTarget = await postgresDatabase();
    dropped.push(moveTarget);
    const moved = cli(`sqlite:${source}`, 'move', '--to', moveTarget.url);
    report('move SQLite to PostgreSQL', moved);
    console.log(
      `  ${/writes were refused for [\d.]+ s/.exec(moved.lastLine)?.[0]}`,
    );

    // creates beside a backup, on stores of the same size that were not moved
    const served = join(folder, 'served.sqlite');
    fillSqlite(served);
    await createsBesideABackup('SQLite', `sqlite:${served}`, folder);
    const servedPostgres = await postgresDatabase();
    dropped.push(servedPostgres);
    cli(servedPostgres.url, 'restore', fromSqlite);
    await createsBesideABackup('PostgreSQL', servedPostgres.url, folder);
  } finally {
    for (const database of dropped) await database.drop();
    rmSync(folder, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
