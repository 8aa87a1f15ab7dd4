// @ts-check
// `node bench/request-path.js`: the files of the service a request passes, counted rather
// than read. The built service runs on a fresh SQLite file with the inspector counting which
// functions run (bench/request-path-probe.js); after a warm-up, each request is measured
// alone, three times, and a file counts when a function of it ran all three times, so that a
// background loop's tick (the dispatcher's, a job's, the fence's look) that happened to fall
// in one window does not. Prints, for a create with an Idempotency-Key, one without, and a
// read by id, the number of project files (src/, as built) and which they are.
'use strict';
const { existsSync, mkdtempSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join, relative } = require('node:path');
const { ROOT, startBuiltService } = require('./built-service');

const ROUNDS = 3;
const WARM_UP = 30;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function waitForFile(file) {
  const deadline = Date.now() + 10_000;
  while (!existsSync(file)) {
    if (Date.now() > deadline)
      throw new Error(`the service wrote no ${file} within 10 s`);
    await sleep(5);
  }
}

async function main() {
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-request-path-'));
  const out = join(folder, 'functions.json');
  const service = await startBuiltService(
    'path',
    // no dispatcher poll within the windows; warnings only
    { REQUEST_PATH_OUT: out, WEBHOOKS_POLL_INTERVAL: '1h', LOG_LEVEL: 'warn' },
    { nodeArgs: ['--require', join(__dirname, 'request-path-probe.js')] },
  );
  let nextId = 1;
  const headers = { Authorization: `Bearer ${service.token}` };
  const create = (key) =>
    fetch(`${service.base}/plants`, {
      method: 'POST',
      headers: {
        ...headers,
        'Content-Type': 'application/json',
        ...(key === undefined ? {} : { 'Idempotency-Key': key }),
      },
      body: JSON.stringify({ id: nextId++, name: 'Fern' }),
    }).then((response) => response.arrayBuffer());
  const read = () =>
    fetch(`${service.base}/plants/1`, { headers }).then((response) =>
      response.arrayBuffer(),
    );

  const measure = async (what, request) => {
    /** @type {Set<string> | undefined} */
    let passed;
    for (let round = 0; round < ROUNDS; round += 1) {
      rmSync(out, { force: true });
      rmSync(`${out}.started`, { force: true });
      service.service.kill('SIGUSR2');
      await waitForFile(`${out}.started`);
      await request();
      service.service.kill('SIGUSR2');
      await waitForFile(out);
      await sleep(20);
      const files = new Set(
        /** @type {string[]} */ (JSON.parse(readFileSync(out, 'utf8')))
          .map((url) => url.replace(/^file:\/\//, ''))
          .filter(
            (path) =>
              path.startsWith(join(ROOT, 'dist')) &&
              !path.includes('node_modules'),
          )
          .map((path) =>
            relative(join(ROOT, 'dist'), path).replace(/\.js$/, '.ts'),
          ),
      );
      passed = passed
        ? new Set([...passed].filter((file) => files.has(file)))
        : files;
    }
    const sorted = [...(passed ?? [])].sort();
    console.log(`${what}: ${sorted.length} files of src/`);
    for (const file of sorted) console.log(`  ${file}`);
  };

  try {
    for (let index = 0; index < WARM_UP; index += 1) {
      await create(`warm-up-${index}`);
      await create();
      await read();
    }
    await measure('POST /plants with an Idempotency-Key', () =>
      create(`measured-${nextId}`),
    );
    await measure('POST /plants', () => create());
    await measure('GET /plants/{id}', read);
  } finally {
    await service.stop();
    rmSync(folder, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
