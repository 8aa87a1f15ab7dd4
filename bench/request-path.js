// @ts-check
// `node bench/request-path.js`: the files of the service a request passes, counted rather
// than read. The built service runs on a fresh SQLite file with the inspector counting which
// functions run (bench/request-path-probe.js); after a warm-up, each request is measured
// alone, three times, and a file counts when a function of it ran all three times, so that a
// background loop's tick (the dispatcher's, a job's, the fence's look) that happened to fall
// in one window does not. Prints, for a create with an Idempotency-Key, one without, and a
// read by id, the number of project files (src/, as built) whose code runs and which they are,
// and apart from them the files the request only reads a constant or a class of (SWC's
// CommonJS output reads an imported binding through a getter of the file that exports it).
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
    /** @type {Map<string, boolean> | undefined} */
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
      /** @type {Map<string, boolean>} each file, and whether only its getters ran */
      const files = new Map();
      for (const {
        url,
        onlyGetters,
      } of /** @type {{url: string, onlyGetters: boolean}[]} */ (
        JSON.parse(readFileSync(out, 'utf8'))
      )) {
        const path = url.replace(/^file:\/\//, '');
        if (
          !path.startsWith(join(ROOT, 'dist')) ||
          path.includes('node_modules')
        )
          continue;
        files.set(
          relative(join(ROOT, 'dist'), path).replace(/\.js$/, '.ts'),
          onlyGetters,
        );
      }
      passed = passed
        ? new Map(
            [...passed]
              .filter(([file]) => files.has(file))
              .map(([file, onlyGetters]) => [
                file,
                onlyGetters && files.get(file) === true,
              ]),
          )
        : files;
    }
    const entries = [...(passed ?? [])].sort(([a], [b]) => a.localeCompare(b));
    const running = entries.filter(([, onlyGetters]) => !onlyGetters);
    const lending = entries.filter(([, onlyGetters]) => onlyGetters);
    console.log(
      `${what}: ${running.length} files of src/ run code (${entries.length} with the ${lending.length} it reads only a constant or class of)`,
    );
    for (const [file] of running) console.log(`  ${file}`);
    if (lending.length > 0) {
      console.log(`  only a constant or class of:`);
      for (const [file] of lending) console.log(`    ${file}`);
    }
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
