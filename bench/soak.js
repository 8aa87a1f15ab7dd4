// @ts-check
// npm run soak [-- --duration 120 --connections 16 --database postgres
//   --postgres-url postgres://postgres@127.0.0.1:5432/postgres]
// Mixed create/read/list/delete load on the built service (loopback, bounded in time), with
// errors counted (must be zero) and RSS sampled over time (must not keep growing after warm-up).
// On PostgreSQL, in a database of its own, dropped at the end.
'use strict';
const { readFileSync } = require('node:fs');
const autocannon = require('autocannon');
const { option, postgresDatabase, startBuiltService, textOption } = require('./built-service');

/** Allowed growth of peak RSS from the middle third of the run to the last third. */
const MAX_GROWTH = 0.1;

const rssMb = (pid) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

async function main() {
  const duration = option('duration', 60);
  const connections = option('connections', 16);
  const database =
    textOption('database') === 'postgres'
      ? postgresDatabase(textOption('postgres-url') ?? 'postgres://postgres@127.0.0.1:5432/postgres', `plant_store_soak_${process.pid}`)
      : undefined;
  const { base, token, service, stop } = await startBuiltService('soak', {
    RATE_LIMIT_PER_TOKEN: '1000000000',
    ...(database && { DATABASE_URL: database.url }),
  });
  try {
    let nextId = 0;
    const auth = { authorization: `Bearer ${token}` };
    const samples = [];
    const sampler = setInterval(() => samples.push({ at: Date.now(), rssMb: rssMb(service.pid) }), 1000);
    // each connection creates a plant, reads it, lists a page, deletes it, and starts again
    const result = await autocannon({
      url: base,
      connections,
      duration,
      requests: [
        {
          method: 'POST',
          path: '/plants',
          headers: { ...auth, 'content-type': 'application/json' },
          setupRequest: (request, context) => {
            context.id = (nextId += 1);
            return { ...request, body: `{"id":${context.id},"name":"Soaked Sedum","tag":"soak"}` };
          },
        },
        { method: 'GET', headers: auth, setupRequest: (request, context) => ({ ...request, path: `/plants/${context.id}` }) },
        { method: 'GET', path: '/plants?limit=50&tag=soak', headers: auth },
        { method: 'DELETE', headers: auth, setupRequest: (request, context) => ({ ...request, path: `/plants/${context.id}` }) },
      ],
    });
    clearInterval(sampler);

    const third = Math.floor(samples.length / 3);
    const middle = Math.max(...samples.slice(third, 2 * third).map((s) => s.rssMb));
    const last = Math.max(...samples.slice(2 * third).map((s) => s.rssMb));
    const growth = (last - middle) / middle;
    const errors = result.errors + result.timeouts + result.non2xx;
    // MB a minute over the last half, by least squares: whether RSS still rises at the end
    const half = samples.slice(Math.floor(samples.length / 2));
    const meanAt = half.reduce((sum, s) => sum + s.at, 0) / half.length;
    const meanRss = half.reduce((sum, s) => sum + s.rssMb, 0) / half.length;
    const slope =
      half.reduce((sum, s) => sum + (s.at - meanAt) * (s.rssMb - meanRss), 0) /
      half.reduce((sum, s) => sum + (s.at - meanAt) ** 2, 0);
    console.log(`soak: ${database ? 'PostgreSQL' : 'SQLite'}, ${duration} s at ${connections} connections, ${result.requests.total} requests, ${result.requests.average.toFixed(0)} req/s`);
    console.log(`errors: ${errors} (${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts)`);
    console.log('RSS MB over time: ' + samples.filter((_, i) => i % Math.max(5, Math.round(duration / 60)) === 0).map((s) => s.rssMb.toFixed(0)).join(' '));
    console.log(`peak RSS, middle third ${middle.toFixed(0)} MB, last third ${last.toFixed(0)} MB: growth ${(growth * 100).toFixed(1)} %`);
    console.log(`RSS over the last half: ${(slope * 60_000).toFixed(2)} MB a minute`);
    const ok = errors === 0 && growth <= MAX_GROWTH;
    console.log(ok ? 'PASS' : `FAIL: errors must be 0 and growth at most ${MAX_GROWTH * 100} %`);
    process.exitCode = ok ? 0 : 1;
  } finally {
    await stop();
    database?.drop();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
