// @ts-check
// npm run bench:pages [-- --duration 10 --readers 24]
// The heaviest pages one read token can ask for: 1,000 plants whose names fill the body limit,
// listed with limit=1000 by many readers at once, while a probe times /health/live. The probe's
// worst latency is the longest the event loop was held by one request. Run once with the
// default page bound (PAGE_MAX_BYTES=1mb) and once with it out of the way (64mb), on loopback.
'use strict';
const autocannon = require('autocannon');
const { option, startBuiltService } = require('./built-service');

const PLANTS = 1000;

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function measure(pageMaxBytes, duration, readers) {
  const { base, token, stop } = await startBuiltService('pages', {
    RATE_LIMIT_PER_TOKEN: '1000000000',
    RATE_LIMIT_PER_ADDRESS: '1000000000',
    PAGE_MAX_BYTES: pageMaxBytes,
    LOG_LEVEL: 'warn',
  });
  try {
    const auth = { authorization: `Bearer ${token}` };
    // as long as a name can be within the default 16 KiB body limit
    const name = 'n'.repeat(16_000);
    for (let id = 1; id <= PLANTS; id += 1) {
      const response = await fetch(`${base}/plants`, {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/json' },
        body: `{"id":${id},"name":"${name}","tag":"heavy"}`,
      });
      if (!response.ok) throw new Error(`create answered ${response.status}`);
    }
    const first = await fetch(`${base}/plants?limit=1000`, { headers: auth });
    const pageBytes = (await first.arrayBuffer()).byteLength;

    const probes = [];
    let probing = true;
    const probe = (async () => {
      while (probing) {
        const started = performance.now();
        await fetch(`${base}/health/live`);
        probes.push(performance.now() - started);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const result = await autocannon({
      url: `${base}/plants?limit=1000`,
      headers: auth,
      connections: readers,
      duration,
    });
    probing = false;
    await probe;
    probes.sort((a, b) => a - b);
    return {
      pageMaxBytes,
      pageMb: pageBytes / 1024 ** 2,
      pagesPerSecond: result.requests.average,
      mbPerSecond: result.throughput.average / 1024 ** 2,
      errors: result.errors + result.timeouts + result.non2xx,
      liveP50: percentile(probes, 50),
      liveP99: percentile(probes, 99),
      liveMax: probes[probes.length - 1],
    };
  } finally {
    await stop();
  }
}

async function main() {
  const duration = option('duration', 10);
  const readers = option('readers', 24);
  console.log(`${PLANTS} plants of 16,000-character names; ${readers} readers of GET /plants?limit=1000 for ${duration} s`);
  console.log('PAGE_MAX_BYTES  page MB  pages/s  ms/page  MB/s  errors  /health/live p50  p99  max (ms)');
  for (const bound of ['1mb', '64mb']) {
    const r = await measure(bound, duration, readers);
    console.log(
      [
        r.pageMaxBytes.padEnd(14),
        r.pageMb.toFixed(2).padStart(7),
        r.pagesPerSecond.toFixed(0).padStart(8),
        // the service is saturated: each page holds the one event loop for about this long
        (1000 / r.pagesPerSecond).toFixed(1).padStart(8),
        r.mbPerSecond.toFixed(0).padStart(5),
        String(r.errors).padStart(7),
        r.liveP50.toFixed(1).padStart(18),
        r.liveP99.toFixed(1).padStart(5),
        r.liveMax.toFixed(1).padStart(5),
      ].join(' '),
    );
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
