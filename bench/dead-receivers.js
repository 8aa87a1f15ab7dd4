// @ts-check
// npm run bench:dead-receivers [-- --duration 10 --rate 20 --against DIR]
// What receivers that refuse every connection cost everyone else: GET /plants/{id} timed by
// autocannon while plants are added at a steady rate, then POST /plants timed the same way
// (each create an event the dead receivers want), once with no subscription and once with 100
// subscriptions to a loopback port nothing listens on. `--against DIR` runs the same against
// another build (a worktree), to compare.
'use strict';
const autocannon = require('autocannon');
const { ROOT, cliToken, option, startBuiltService } = require('./built-service');

const SUBSCRIPTIONS = 100;

function against() {
  const index = process.argv.indexOf('--against');
  return index === -1 ? ROOT : process.argv[index + 1];
}

/** A free loopback port, left closed: every connection to it is refused at once. */
async function refusingPort() {
  const { createServer } = require('node:net');
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (server.address());
      server.close(() => resolve(port));
    });
  });
}

async function measure(root, subscriptions, duration, rate, connections) {
  let manager = '';
  const { base, token, stop } = await startBuiltService(
    'dead-receivers',
    {
      RATE_LIMIT_PER_TOKEN: '1000000000',
      RATE_LIMIT_PER_ADDRESS: '1000000000',
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      LOG_LEVEL: 'error',
    },
    {
      root,
      prepare: (_file, env) => {
        manager = cliToken(env, { name: 'manager', scopes: 'webhooks:manage', root });
      },
    },
  );
  try {
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    const port = await refusingPort();
    for (let i = 0; i < subscriptions; i += 1) {
      const response = await fetch(`${base}/webhooks/subscriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${manager}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `http://127.0.0.1:${port}/dead/${i}` }),
      });
      if (response.status !== 201) throw new Error(`subscribe answered ${response.status}`);
    }
    await fetch(`${base}/plants`, { method: 'POST', headers: auth, body: '{"id":1,"name":"Read"}' });
    let creating = true;
    let created = 0;
    const creator = (async () => {
      let id = 2;
      while (creating) {
        const started = performance.now();
        await fetch(`${base}/plants`, { method: 'POST', headers: auth, body: `{"id":${id++},"name":"Event"}` });
        created += 1;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, 1000 / rate - (performance.now() - started))));
      }
    })();
    const result = await autocannon({ url: `${base}/plants/1`, headers: auth, connections, duration });
    creating = false;
    await creator;
    let nextId = 1_000_000;
    const creates = await autocannon({
      url: base,
      connections,
      duration,
      requests: [
        {
          method: 'POST',
          path: '/plants',
          headers: auth,
          setupRequest: (request) => ({ ...request, body: `{"id":${(nextId += 1)},"name":"Timed"}` }),
        },
      ],
    });
    return {
      subscriptions,
      created,
      requestsPerSecond: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.errors + result.timeouts + result.non2xx,
      postsPerSecond: creates.requests.average,
      postP50: creates.latency.p50,
      postP99: creates.latency.p99,
      postErrors: creates.errors + creates.timeouts + creates.non2xx,
    };
  } finally {
    await stop();
  }
}

async function main() {
  const duration = option('duration', 10);
  const rate = option('rate', 20);
  const connections = option('connections', 32);
  const root = against();
  console.log(`build: ${root}; GET /plants/1 over ${connections} connections for ${duration} s, plants added at ${rate}/s`);
  console.log('subscriptions  plants added  GET/s  p50 ms  p99 ms  errors  POST/s  p50 ms  p99 ms  errors');
  const rows = [];
  for (const subscriptions of [0, SUBSCRIPTIONS]) {
    const r = await measure(root, subscriptions, duration, rate, connections);
    rows.push(r);
    console.log(
      [
        String(r.subscriptions).padEnd(13),
        String(r.created).padStart(12),
        r.requestsPerSecond.toFixed(0).padStart(6),
        String(r.p50).padStart(7),
        String(r.p99).padStart(7),
        String(r.errors).padStart(7),
        r.postsPerSecond.toFixed(0).padStart(7),
        String(r.postP50).padStart(7),
        String(r.postP99).padStart(7),
        String(r.postErrors).padStart(7),
      ].join(' '),
    );
  }
  const [healthy, dead] = rows;
  console.log(
    `p99 with ${SUBSCRIPTIONS} dead receivers / without: GET ${(dead.p99 / healthy.p99).toFixed(2)}, POST ${(dead.postP99 / healthy.postP99).toFixed(2)}`,
  );
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
