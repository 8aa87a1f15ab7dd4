// @ts-check
// Issue 48: a quick receiver's delivery delay beside four receivers that answer 200 just under
// WEBHOOKS_SLOW (4.5 s at the defaults) or never answer, at the default settings: plants are
// created at 20 a second for --seconds (15), each create's event timed from the create's answer
// to its request reaching the quick receiver. Prints one JSON line per case.
//
//   npm run build && node bench/webhook-fairness.js [--seconds 15] [--root DIR of another build]
'use strict';
const { execFileSync } = require('node:child_process');
const { createServer } = require('node:http');
const { join } = require('node:path');
const { ROOT, option, startBuiltService, textOption } = require('./built-service');

/** @param {(response: import('node:http').ServerResponse, body: string) => void} answer */
function startReceiver(answer) {
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => answer(response, body));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      resolve({
        url: `http://127.0.0.1:${port}/hook`,
        close: () => {
          server.closeAllConnections();
          return new Promise((done) => server.close(done));
        },
      });
    }),
  );
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];

/** @param {'slow' | 'hanging'} kind @param {string} root @param {number} seconds */
async function measure(kind, root, seconds) {
  /** @type {Map<number, number>} plant id to when its request reached the quick receiver */
  const arrived = new Map();
  const quick = await startReceiver((response, body) => {
    arrived.set(Number(/"id":(\d+)/.exec(body)?.[1]), performance.now());
    response.writeHead(204).end();
  });
  const others = await Promise.all(
    Array.from({ length: 4 }, () =>
      startReceiver((response) => {
        if (kind === 'slow') setTimeout(() => response.writeHead(200).end(), 4500);
      }),
    ),
  );
  const service = await startBuiltService(
    `fairness-${kind}`,
    { WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true', LOG_LEVEL: 'error', RATE_LIMIT_PER_TOKEN: '1000000' },
    {
      root,
      prepare: (_file, serviceEnv) => {
        for (const receiver of [...others, quick]) {
          execFileSync(process.execPath, [join(root, 'dist', 'cli.js'), 'webhooks', 'add', '--url', receiver.url], {
            env: serviceEnv,
            stdio: 'ignore',
          });
        }
      },
    },
  );
  try {
    /** @type {Map<number, number>} */
    const createdAt = new Map();
    const creates = seconds * 20;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: creates }, async (_, index) => {
        const id = index + 1;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, started + index * 50 - performance.now())));
        const response = await fetch(`${service.base}/plants`, {
          method: 'POST',
          headers: { authorization: `Bearer ${service.token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ id, name: `Plant ${id}` }),
        });
        await response.text();
        createdAt.set(id, performance.now());
      }),
    );
    // the last events' delays, however long, within a minute
    const deadline = performance.now() + 60_000;
    while (arrived.size < creates && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const delays = [...createdAt]
      .map(([id, at]) => (arrived.has(id) ? Math.max(0, arrived.get(id) - at) : Infinity))
      .sort((a, b) => a - b);
    return {
      beside: `4 receivers ${kind === 'slow' ? 'answering 200 in 4.5 s' : 'never answering'}`,
      build: root,
      events: creates,
      delivered: arrived.size,
      p50Ms: Math.round(percentile(delays, 0.5)),
      p99Ms: Math.round(percentile(delays, 0.99)),
      maxMs: Math.round(delays[delays.length - 1]),
    };
  } finally {
    await service.stop();
    await Promise.all([quick, ...others].map((receiver) => receiver.close()));
  }
}

async function main() {
  const seconds = option('seconds', 15);
  const root = textOption('root') ?? ROOT;
  for (const kind of /** @type {const} */ (['slow', 'hanging'])) {
    console.log(JSON.stringify(await measure(kind, root, seconds)));
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
