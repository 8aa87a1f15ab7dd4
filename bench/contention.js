// @ts-check
// npm run bench:contention [-- --database sqlite|postgres --duration 10 --concurrency 70
//                              --rules locked,serializable --pool-sizes 10 --stock 100000
//                              --instances 1
//                              --main dist-test/test/fixtures/inventory/main.js
//                              --postgres-url postgres://postgres@127.0.0.1:5432/postgres]
// Contended transfers: the inventory fixture (test/fixtures/inventory/) as a process, and
// --concurrency clients moving one plant at a time between the same two greenhouses, half one
// way and half the other, for --duration seconds each, with each rule ("locked": its rows
// locked at READ COMMITTED; "serializable": read, checked and written at SERIALIZABLE, retried
// on conflicts) and each pool size. Prints transfers a second, latency and every answer that
// was not 201, and checks that the stock still adds up. --instances runs that many processes
// on the one database, the clients spread over them in turn. Another build is measured with
// --main pointing at its fixture build.
'use strict';
const { spawn } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const http = require('node:http');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const Database = require('better-sqlite3');
const { Client } = require('pg');
const { buildFixtures, fixtureMain } = require('../test/helpers/build-fixtures');
const { freePort } = require('./built-service');

const ROUTES = { locked: '/fixture-transfers', serializable: '/fixture-transfers/serializable' };

function parseArguments(argv) {
  const options = {
    database: 'sqlite',
    duration: 10,
    concurrency: 70,
    rules: 'locked,serializable',
    'pool-sizes': '10',
    stock: 100000,
    instances: 1,
    main: '',
    'postgres-url': 'postgres://postgres@127.0.0.1:5432/postgres',
  };
  for (let i = 0; i < argv.length; i += 1) {
    const name = argv[i].replace(/^--/, '');
    if (!(name in options)) throw new Error(`unknown option --${name}`);
    const value = argv[++i];
    options[name] = typeof options[name] === 'number' ? Number(value) : value;
  }
  return options;
}

/** A fresh database for one run, its URL, a way to run a statement on it, and its removal. */
async function freshDatabase(options) {
  if (options.database === 'sqlite') {
    const folder = mkdtempSync(join(tmpdir(), 'plant-store-contention-'));
    const file = join(folder, 'store.sqlite');
    return {
      url: `sqlite:${file}`,
      run: async (sql) => {
        const db = new Database(file);
        try {
          const statement = db.prepare(sql);
          return statement.reader ? statement.all() : (statement.run(), []);
        } finally {
          db.close();
        }
      },
      drop: async () => rmSync(folder, { recursive: true, force: true }),
    };
  }
  const name = `plant_store_contention_${process.pid}_${Date.now()}`;
  const admin = new Client({ connectionString: options['postgres-url'] });
  await admin.connect();
  await admin.query(`CREATE DATABASE "${name}"`);
  await admin.end();
  const url = new URL(options['postgres-url']);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    run: async (sql) => {
      const client = new Client({ connectionString: url.toString() });
      await client.connect();
      try {
        return (await client.query(sql)).rows;
      } finally {
        await client.end();
      }
    },
    drop: async () => {
      const client = new Client({ connectionString: options['postgres-url'] });
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
      await client.end();
    },
  };
}

/** Starts the fixture process; resolves with its base URL, token and a way to stop it. */
async function startFixture(main, env) {
  const port = await freePort();
  const child = spawn(process.execPath, [main], {
    cwd: tmpdir(),
    env: {
      PATH: process.env.PATH ?? '',
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      // the load comes from one token and one address
      RATE_LIMIT_PER_TOKEN: '1000000000',
      RATE_LIMIT_PER_ADDRESS: '1000000000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  const token = await new Promise((resolve, reject) => {
    child.once('exit', (code) => reject(new Error(`the fixture exited with ${code}:\n${output}`)));
    child.stdout.on('data', (chunk) => {
      output += chunk;
      const found = /"fixtureToken":"([^"]+)"/.exec(output);
      if (found) resolve(found[1]);
    });
  });
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    token,
    stop: () =>
      new Promise((resolve) => {
        child.removeAllListeners('exit');
        child.once('exit', resolve);
        child.kill('SIGTERM');
      }),
  };
}

/** One POST on `agent`: its status and message, and how long it took in ms. */
function post(agent, url, token, body) {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        agent,
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode,
            message: response.statusCode === 201 ? '' : JSON.parse(text).message,
            ms: performance.now() - started,
          }),
        );
      },
    );
    request.once('error', reject);
    request.end(JSON.stringify(body));
  });
}

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];

async function measure(options, rule, poolSize) {
  const database = await freshDatabase(options);
  const fixtures = [];
  for (let instance = 0; instance < options.instances; instance += 1) {
    fixtures.push(
      await startFixture(options.main || fixtureMain('inventory'), {
        DATABASE_URL: database.url,
        DB_POOL_SIZE: String(poolSize),
      }),
    );
  }
  try {
    await database.run(
      `INSERT INTO fixture_greenhouse_stock (greenhouse, quantity) VALUES ('A', ${options.stock}), ('B', ${options.stock})`,
    );
    const agent = new http.Agent({ keepAlive: true, maxSockets: options.concurrency });
    const answers = [];
    const ends = Date.now() + options.duration * 1000;
    await Promise.all(
      Array.from({ length: options.concurrency }, async (_, client) => {
        for (let i = 0; Date.now() < ends; i += 1) {
          const [source, destination] = (client + i) % 2 === 0 ? ['A', 'B'] : ['B', 'A'];
          const fixture = fixtures[client % fixtures.length];
          answers.push(
            await post(agent, `${fixture.baseUrl}${ROUTES[rule]}`, fixture.token, { source, destination, quantity: 1 }),
          );
        }
      }),
    );
    agent.destroy();
    const [{ total }] = await database.run('SELECT SUM(quantity) AS total FROM fixture_greenhouse_stock');
    const latencies = answers.map(({ ms }) => ms).sort((a, b) => a - b);
    const others = {};
    for (const { status, message } of answers) {
      if (status === 201) continue;
      const key = `${status} ${message}`;
      others[key] = (others[key] ?? 0) + 1;
    }
    return {
      rule,
      poolSize,
      transfersPerSecond: answers.filter(({ status }) => status === 201).length / options.duration,
      p50: percentile(latencies, 50),
      p99: percentile(latencies, 99),
      max: latencies[latencies.length - 1],
      others,
      stockAddsUp: Number(total) === 2 * options.stock,
    };
  } finally {
    await Promise.all(fixtures.map((fixture) => fixture.stop()));
    await database.drop();
  }
}

async function main() {
  const options = parseArguments(process.argv.slice(2));
  if (!options.main) buildFixtures();
  console.log(
    `contended transfers on ${options.database}: ${options.concurrency} clients over ${options.instances} instance(s), ${options.duration} s each, two greenhouses of ${options.stock}`,
  );
  console.log('rule          pool  transfers/s   p50 ms   p99 ms   max ms  other answers');
  for (const poolSize of options['pool-sizes'].split(',').map(Number)) {
    for (const rule of options.rules.split(',')) {
      const result = await measure(options, rule, poolSize);
      console.log(
        [
          rule.padEnd(13),
          String(poolSize).padStart(4),
          result.transfersPerSecond.toFixed(0).padStart(12),
          result.p50.toFixed(1).padStart(8),
          result.p99.toFixed(1).padStart(8),
          result.max.toFixed(0).padStart(8),
          ` ${JSON.stringify(result.others)}${result.stockAddsUp ? '' : '  THE STOCK DOES NOT ADD UP'}`,
        ].join(' '),
      );
    }
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
