// @ts-check
// The webhook dispatcher's throughput: a backlog of plant events for two subscriptions, one to a
// fast receiver and one to a receiver that takes a second to answer, both on loopback. Reports
// deliveries per second to the fast receiver while the slow one holds its share of the slots,
// and the most attempts the slow receiver had open at once.
// Run by `npm run bench` (bench/run.js); alone: node bench/webhook-throughput.js [--plants N]
//   [--seconds S] [--against DIR] [--no-slow] (the fast receiver alone)
//   [--database postgres [--postgres-url postgres://postgres@127.0.0.1:5432/postgres] [--relay-rtt 1]]
'use strict';
const { execFileSync } = require('node:child_process');
const { createServer } = require('node:http');
const { join } = require('node:path');
const Database = require('better-sqlite3');
const { ROOT, option, postgresDatabase, startBuiltService } = require('./built-service');
const { postgresLabel, relayedUrl } = require('./delay-relay');

/** @param {(response: import('node:http').ServerResponse) => void} answer */
function startReceiver(answer) {
  const stats = { received: 0, open: 0, maxOpen: 0, firstAt: 0, lastAt: 0 };
  const server = createServer((request, response) => {
    stats.open += 1;
    stats.maxOpen = Math.max(stats.maxOpen, stats.open);
    request.resume();
    request.on('end', () => {
      stats.received += 1;
      stats.lastAt = performance.now();
      if (stats.received === 1) stats.firstAt = stats.lastAt;
      answer(response);
    });
    response.on('close', () => (stats.open -= 1));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      resolve({
        url: `http://127.0.0.1:${port}/hook`,
        stats,
        close: () => {
          server.closeAllConnections();
          return new Promise((done) => server.close(done));
        },
      });
    }),
  );
}

/**
 * Measures one build (its folder holds dist/): the backlog is written straight into the
 * database before the service starts, so the figure is the dispatcher's alone.
 * On PostgreSQL (`postgresUrl`), `relayRtt` whole ms put a relay adding them to each round trip
 * between the service and its database (bench/delay-relay.js); the backlog is written directly.
 * @param {{ root?: string, node?: string, plants?: number, seconds?: number, name?: string, slowReceiver?: boolean, postgresUrl?: string, relayRtt?: number }} options
 */
async function measureWebhookThroughput({ root = ROOT, node = process.execPath, plants = 5000, seconds = 10, name = 'service', slowReceiver = true, postgresUrl = '', relayRtt = 0, nodeArgs = [] } = {}) {
  const fast = await startReceiver((response) => response.writeHead(204).end());
  const slow = await startReceiver((response) => setTimeout(() => response.writeHead(204).end(), 1000));
  const env = { WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true', LOG_LEVEL: 'error' };
  // on PostgreSQL, a database of its own on the server the URL names
  const database = postgresUrl ? postgresDatabase(postgresUrl, `plant_store_webhooks_${process.pid}_${Date.now()}`) : undefined;
  const relay = database && relayRtt > 0 ? await relayedUrl(database.url, relayRtt) : undefined;
  if (database) env.DATABASE_URL = relay?.url ?? database.url;
  const service = await startBuiltService(`webhooks-${name}`, env, {
    root,
    node,
    nodeArgs,
    prepare: (file, serviceEnv) => {
      for (const receiver of slowReceiver ? [fast, slow] : [fast]) {
        execFileSync(node, [join(root, 'dist', 'cli.js'), 'webhooks', 'add', '--url', receiver.url], {
          env: serviceEnv,
          stdio: 'ignore',
        });
      }
      if (database) {
        database.run(`INSERT INTO plants (id, name, tag) SELECT n, 'Plant ' || n, 'bench' FROM generate_series(1, ${plants}) AS n`);
        return;
      }
      const db = new Database(file);
      const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)');
      db.transaction(() => {
        for (let id = 1; id <= plants; id += 1) insert.run(id, `Plant ${id}`, 'bench');
      })();
      db.close();
    },
  });
  // timed from the first delivery to the last, so that the service's start does not count
  const startedBy = performance.now() + 10_000;
  while (fast.stats.received === 0 && performance.now() < startedBy) {
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  const deadline = (fast.stats.firstAt || performance.now()) + seconds * 1000;
  while (fast.stats.received < plants && performance.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const end = fast.stats.received < plants ? performance.now() : fast.stats.lastAt;
  const elapsed = Math.max(end - fast.stats.firstAt, 1) / 1000;
  const result = {
    name,
    backlog: plants,
    delivered: fast.stats.received,
    seconds: Number(elapsed.toFixed(2)),
    deliveriesPerSecond: Math.round(fast.stats.received / elapsed),
    slowReceiver,
    slowReceiverMaxOpen: slow.stats.maxOpen,
  };
  await service.stop();
  await Promise.all([fast.close(), slow.close(), relay?.close()]);
  database?.drop();
  result.database = database ? postgresLabel(relayRtt) : 'SQLite';
  return result;
}

function printWebhookThroughput(results) {
  const receivers = results.every((r) => r.slowReceiver === false) ? 'a fast receiver alone' : 'a fast receiver and a 1 s receiver';
  console.log(`\nwebhook dispatcher: a backlog for ${receivers}, one instance on ${results[0].database ?? 'SQLite'}`);
  for (const r of results) {
    console.log(
      `  ${r.name.padEnd(16)} ${String(r.deliveriesPerSecond).padStart(6)} deliveries/s to the fast receiver ` +
        `(${r.delivered}/${r.backlog} in ${r.seconds} s), slow receiver at most ${r.slowReceiverMaxOpen} at once`,
    );
  }
}

module.exports = { measureWebhookThroughput, printWebhookThroughput };

if (require.main === module) {
  (async () => {
    const plants = option('plants', 5000);
    const seconds = option('seconds', 10);
    const slowReceiver = !process.argv.includes('--no-slow');
    const index = process.argv.indexOf('--against');
    const postgres = process.argv.includes('--database') && process.argv[process.argv.indexOf('--database') + 1] === 'postgres';
    const urlIndex = process.argv.indexOf('--postgres-url');
    const postgresUrl = postgres ? (urlIndex === -1 ? 'postgres://postgres@127.0.0.1:5432/postgres' : process.argv[urlIndex + 1]) : '';
    const relayRtt = option('relay-rtt', 0);
    const results = [await measureWebhookThroughput({ plants, seconds, slowReceiver, postgresUrl, relayRtt })];
    if (index !== -1) {
      results.push(
        await measureWebhookThroughput({ root: process.argv[index + 1], plants, seconds, slowReceiver, name: 'service-against', postgresUrl, relayRtt }),
      );
    }
    printWebhookThroughput(results);
  })().catch((error) => {
    console.error(error);
    process.exit(1);
  });
}
