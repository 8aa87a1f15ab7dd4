// @ts-check
// npm run bench:callgrind [-- --scenarios get-by-id,post,post-keyed,list --requests 2500 --warmup 500
//                            --service-env KEY=VALUE[,...]]
// Instructions per request, counted by valgrind's callgrind rather than timed: the built app
// runs in one process and requests are injected into it (light-my-request: no sockets, no
// scheduler, no load generator competing for the cores), so the count is the same from one run
// to the next within a percent or two, whatever else the machine is doing. Each scenario runs
// twice, with `warmup` and with `requests` requests; the difference of the two totals divided by
// the difference of the counts is the cost of one request, start-up and warm-up cancelled out.
'use strict';
const { spawnSync } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const { PRODUCTION_NODE_FLAGS } = require('./built-service');

const ROOT = join(__dirname, '..');
const SEEDED = 1000;

/** @type {Record<string, (i: number) => import('light-my-request').InjectOptions>} */
const SCENARIOS = {
  'get-by-id': (i) => ({ method: 'GET', url: `/plants/${(i % SEEDED) + 1}` }),
  post: (i) => ({
    method: 'POST',
    url: '/plants',
    headers: { 'content-type': 'application/json' },
    payload: `{"id":${1_000_000 + i},"name":"Bench Basil","tag":"herb"}`,
  }),
  'post-keyed': (i) => ({
    method: 'POST',
    url: '/plants',
    headers: {
      'content-type': 'application/json',
      'idempotency-key': `callgrind-${i}`,
    },
    payload: `{"id":${2_000_000 + i},"name":"Bench Basil","tag":"herb"}`,
  }),
  list: () => ({ method: 'GET', url: '/plants?limit=100' }),
};

function parseArguments(argv) {
  const options = {
    scenarios: Object.keys(SCENARIOS).join(','),
    requests: 2500,
    warmup: 500,
    'service-env': '',
  };
  for (let i = 0; i < argv.length; i += 1) {
    const name = argv[i].replace(/^--/, '');
    if (!(name in options)) throw new Error(`unknown option --${name}`);
    const value = argv[++i];
    options[name] = typeof options[name] === 'number' ? Number(value) : value;
  }
  const unknown = options.scenarios
    .split(',')
    .filter((scenario) => !(scenario in SCENARIOS));
  if (unknown.length > 0)
    throw new Error(`unknown scenario ${unknown.join(', ')}`);
  if (!(options.requests > options.warmup && options.warmup > 0))
    throw new Error('--requests must be greater than --warmup, both positive');
  const assignments = options['service-env'].split(',').filter(Boolean);
  if (assignments.some((assignment) => !/^[A-Z_][A-Z0-9_]*=/.test(assignment)))
    throw new Error('--service-env is KEY=VALUE[,KEY=VALUE...]');
  return {
    ...options,
    serviceEnv: Object.fromEntries(
      assignments.map((assignment) => {
        const at = assignment.indexOf('=');
        return [assignment.slice(0, at), assignment.slice(at + 1)];
      }),
    ),
  };
}

/** Inside valgrind: start the app on a fresh SQLite file, seed it, inject `count` requests. */
async function work(scenario, count) {
  const inject = require('light-my-request');
  const { createApp } = require(join(ROOT, 'dist', 'setup-app'));
  const { TokensService } = require(
    join(ROOT, 'dist', 'platform', 'auth', 'tokens.service'),
  );
  const { DataSource } = require('typeorm');
  const app = await createApp();
  await app.init();
  const handler = app.getHttpAdapter().getInstance();
  const tokens = app.get(TokensService);
  // The token lookup cache expires after a second of wall-clock time. Under valgrind a request
  // takes fifty times longer, so expiries, and the database lookups after them, would follow
  // how busy the machine is; at full speed one lookup a second is nothing per request.
  tokens.lookups.ttl = 3_600_000;
  // The store's fence looks for a move every half second of wall-clock time, so the looks a
  // run counts would follow how busy the machine is too: they stop here.
  const { StoreFenceService } = require(
    join(ROOT, 'dist', 'platform', 'database', 'store-fence.service'),
  );
  app.get(StoreFenceService).onApplicationShutdown();
  const { token } = await tokens.issue({
    name: 'callgrind',
    scopes: ['plants:read', 'plants:write'],
  });
  const authorization = `Bearer ${token}`;
  const send = async (options) => {
    const response = await inject(handler, {
      ...options,
      remoteAddress: '127.0.0.1',
      headers: { ...options.headers, authorization },
    });
    if (response.statusCode >= 300) {
      throw new Error(
        `${options.method} ${options.url} answered ${response.statusCode}: ${response.body}`,
      );
    }
  };
  // seeded in one statement: under valgrind, a thousand requests would cost more than the run
  await app
    .get(DataSource)
    .query(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${SEEDED}) ` +
        "INSERT INTO plants (id, name) SELECT i, 'plant ' || i FROM n",
    );
  const request = SCENARIOS[scenario];
  for (let i = 0; i < count; i += 1) await send(request(i));
  await app.close();
}

function countInstructions(scenario, count, serviceEnv) {
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-callgrind-'));
  const out = join(folder, 'callgrind.out');
  try {
    const result = spawnSync(
      'valgrind',
      [
        '--tool=callgrind',
        `--callgrind-out-file=${out}`,
        process.execPath,
        ...PRODUCTION_NODE_FLAGS,
        // compile and collect on the main thread: with background threads, when optimised
        // code arrives depends on how busy the machine is, and so does the count
        '--single-threaded',
        // and collect on a schedule of allocation alone: the memory reducer's and the idle
        // collector's timers run on wall-clock time, of which valgrind makes a request take fifty
        // times more, so two runs of one build could count 15 % apart
        '--predictable-gc-schedule',
        __filename,
        '--worker',
        scenario,
        String(count),
      ],
      {
        env: {
          PATH: process.env.PATH,
          NODE_ENV: 'production',
          LOG_LEVEL: 'info',
          DATABASE_URL: `sqlite:${join(folder, 'plant-store.sqlite')}`,
          RATE_LIMIT_PER_TOKEN: '1000000000',
          WEBHOOKS_POLL_INTERVAL: '1h',
          ...serviceEnv,
        },
        // the access log goes to stdout, as in production; nobody reads it here
        stdio: ['ignore', 'ignore', 'pipe'],
        encoding: 'utf8',
      },
    );
    if (result.status !== 0) {
      throw new Error(`callgrind run failed:\n${result.stderr.slice(-2000)}`);
    }
    const totals = /^(?:summary|totals):\s*(\d+)/m.exec(
      readFileSync(out, 'utf8'),
    );
    if (!totals) throw new Error(`no instruction total in ${out}`);
    return Number(totals[1]);
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

function main() {
  const options = parseArguments(process.argv.slice(2));
  const rows = [];
  for (const scenario of options.scenarios.split(',')) {
    const short = countInstructions(
      scenario,
      options.warmup,
      options.serviceEnv,
    );
    const long = countInstructions(
      scenario,
      options.requests,
      options.serviceEnv,
    );
    const perRequest = (long - short) / (options.requests - options.warmup);
    rows.push({ scenario, perRequest });
    console.log(
      `${scenario.padEnd(10)} ${(perRequest / 1e6).toFixed(3)} M instructions per request`,
    );
  }
  return rows;
}

if (process.argv[2] === '--worker') {
  work(process.argv[3], Number(process.argv[4])).catch((error) => {
    console.error(error);
    process.exit(1);
  });
} else {
  main();
}
