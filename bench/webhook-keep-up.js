// @ts-check
// Issue 48: does delivery keep up with creates? Plants are created as fast as --connections (32)
// clients can for --seconds (20), through every one of --instances (1) instances of the service
// on one database, with one subscription to a receiver that answers at once. Prints, from the
// same run: creates a second, deliveries a second over the same window, the events still owed
// when the creates stop and how long they took to drain, and each event's delay from its
// create's answer to its request reaching the receiver.
//
//   npm run build && node bench/webhook-keep-up.js [--database postgres] [--instances 2]
//     [--seconds 20] [--connections 32] [--root DIR of another build]
//     [--postgres-url postgres://postgres@127.0.0.1:5432/postgres]
'use strict';
const { execFileSync } = require('node:child_process');
const { createServer } = require('node:http');
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const autocannon = require('autocannon');
const { ROOT, option, postgresDatabase, startBuiltService, textOption } = require('./built-service');

/** A receiver answering 204 at once, noting when each plant's event reached it. */
function startReceiver() {
  /** @type {Map<number, number>} */
  const arrived = new Map();
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      arrived.set(Number(/"id":(\d+)/.exec(body)?.[1]), performance.now());
      response.writeHead(204).end();
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      resolve({
        url: `http://127.0.0.1:${port}/hook`,
        arrived,
        close: () => {
          server.closeAllConnections();
          return new Promise((done) => server.close(done));
        },
      });
    }),
  );
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;

async function measure({ root, postgresUrl, instances, seconds, connections, rate }) {
  const receiver = await startReceiver();
  const database = postgresUrl ? postgresDatabase(postgresUrl, `plant_store_keep_up_${process.pid}_${Date.now()}`) : undefined;
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-keep-up-'));
  const env = {
    WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
    LOG_LEVEL: 'error',
    RATE_LIMIT_PER_TOKEN: '100000000',
    ...JSON.parse(process.env.KEEP_UP_ENV ?? '{}'),
    DATABASE_URL: database ? database.url : `sqlite:${join(folder, 'keep-up.sqlite')}`,
  };
  // the CLI migrates the file but makes none
  if (!database) writeFileSync(join(folder, 'keep-up.sqlite'), '');
  const services = [];
  try {
    for (let index = 0; index < instances; index += 1) {
      services.push(
        await startBuiltService(`keep-up-${index}`, env, {
          root,
          prepare: (_file, serviceEnv) => {
            if (index > 0) return;
            execFileSync(process.execPath, [join(root, 'dist', 'cli.js'), 'webhooks', 'add', '--url', receiver.url], {
              env: serviceEnv,
              stdio: 'ignore',
            });
          },
        }),
      );
    }
    /** @type {Map<number, number>} plant id to when its create was answered */
    const createdAt = new Map();
    const started = performance.now();
    const runs = await Promise.all(
      services.map((service, index) => {
        let nextId = (index + 1) * 1_000_000_000;
        return autocannon({
          url: service.base,
          connections: Math.ceil(connections / instances),
          duration: seconds,
          // creates a second through this instance; 0 for as fast as the connections go
          overallRate: rate ? Math.ceil(rate / instances) : undefined,
          requests: [
            {
              method: 'POST',
              path: '/plants',
              headers: { authorization: `Bearer ${service.token}`, 'content-type': 'application/json' },
              setupRequest: (request) => ({ ...request, body: `{"id":${(nextId += 1)},"name":"Kept up"}` }),
              onResponse: (status, body) => {
                if (status === 200) createdAt.set(Number(/"id":(\d+)/.exec(body)?.[1]), performance.now());
              },
            },
          ],
        });
      }),
    );
    const stopped = performance.now();
    const deliveredInWindow = [...receiver.arrived.values()].filter((at) => at <= stopped).length;
    const owedAtStop = createdAt.size - deliveredInWindow;
    const drainBy = stopped + 120_000;
    while ([...createdAt.keys()].some((id) => !receiver.arrived.has(id)) && performance.now() < drainBy) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const lastArrival = Math.max(...receiver.arrived.values());
    const delays = [...createdAt]
      .map(([id, at]) => (receiver.arrived.get(id) ?? Number.POSITIVE_INFINITY) - at)
      .sort((a, b) => a - b);
    const window = (stopped - started) / 1000;
    return {
      database: database ? 'PostgreSQL' : 'SQLite',
      instances,
      connections,
      rate,
      seconds: Number(window.toFixed(1)),
      createsPerSecond: Math.round(createdAt.size / window),
      deliveriesPerSecond: Math.round(deliveredInWindow / window),
      createErrors: runs.reduce((sum, run) => sum + run.errors + run.timeouts + run.non2xx, 0),
      owedAtStop,
      drainedInMs: Math.round(Math.max(0, lastArrival - stopped)),
      undelivered: delays.filter((delay) => delay === Number.POSITIVE_INFINITY).length,
      delayMs: {
        p50: Math.round(percentile(delays, 0.5)),
        p99: Math.round(percentile(delays, 0.99)),
        max: Math.round(delays.at(-1) ?? 0),
      },
    };
  } finally {
    await Promise.all(services.map((service) => service.stop()));
    await receiver.close();
    database?.drop();
    rmSync(folder, { recursive: true, force: true });
  }
}

(async () => {
  const postgres = textOption('database') === 'postgres';
  const result = await measure({
    root: textOption('root') ?? ROOT,
    postgresUrl: postgres ? (textOption('postgres-url') ?? 'postgres://postgres@127.0.0.1:5432/postgres') : '',
    instances: option('instances', 1),
    seconds: option('seconds', 20),
    connections: option('connections', 32),
    rate: option('rate', 0),
  });
  console.log(JSON.stringify(result));
})().catch((error) => {
  console.error(error);
  process.exit(1);
});
