// @ts-check
// npm run bench:retention [-- --duration 90 --workers 4]
// Plants added and deleted without pause, each change an event delivered to a local receiver,
// for `duration` seconds: once with retention at 20 s (swept every 5 s) and once with it out of
// the way (1000 days). Every 10 s it prints the database's size on disk, its events and
// deliveries, and the POST latency of that window: with retention they stay flat.
'use strict';
const Database = require('better-sqlite3');
const { statSync } = require('node:fs');
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

async function run(label, retention, duration, workers) {
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
    },
    {
      prepare: (file, env) => {
        databaseFile = file;
        manager = cliToken(env, { name: 'manager', scopes: 'webhooks:manage', root: ROOT });
      },
    },
  );
  const reader = new Database(databaseFile, { readonly: true });
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
    console.log('  s   DB MB  events  deliveries  POST p50 ms  p99 ms');
    const report = setInterval(() => {
      const latencies = window.sort((a, b) => a - b);
      window = [];
      const count = (table) => /** @type {{ n: number }} */ (reader.prepare(`SELECT count(*) AS n FROM ${table}`).get()).n;
      console.log(
        [
          String(Math.round((Date.now() - started) / 1000)).padStart(4),
          sizeMb(databaseFile).toFixed(1).padStart(7),
          String(count('events')).padStart(7),
          String(count('webhook_deliveries')).padStart(11),
          percentile(latencies, 50).toFixed(1).padStart(12),
          percentile(latencies, 99).toFixed(1).padStart(7),
        ].join(' '),
      );
    }, 10_000);
    await Promise.all(Array.from({ length: workers }, worker));
    clearInterval(report);
  } finally {
    reader.close();
    await stop();
    receiver.close();
  }
}

async function main() {
  const duration = option('duration', 90);
  const workers = option('workers', 4);
  await run('with retention', '20s', duration, workers);
  await run('without', '1000d', duration, workers);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
