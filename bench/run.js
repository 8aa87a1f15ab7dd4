// @ts-check
// npm run bench [-- --rounds 3 --duration 5 --warmup 2 --connections 32 --preload 1000000 --synchronous full
//                   --service-env LOG_LEVEL=warn --against ../other-checkout [--against-env KEY=VALUE]
//                   --database postgres [--postgres-url postgres://postgres@127.0.0.1:5432/postgres]
//                   [--relay-rtt 1] [--against-node-args --allocation-site-pretenuring]]
// Starts the built service and four comparison servers (bench/floor-server.js,
// bench/peer-server.js bare and hardened, bench/nest-server.js)
// on SQLite files in a temporary folder, drives each with autocannon on loopback, alternating
// servers round by round, and prints requests/s, latency, errors and peak RSS side by side.
'use strict';
const { spawn, execFileSync } = require('node:child_process');
const {
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  mkdirSync,
  writeFileSync,
} = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { dirname, join } = require('node:path');
const autocannon = require('autocannon');
const Database = require('better-sqlite3');
const { PRODUCTION_NODE_FLAGS } = require('./built-service');
const { postgresLabel, relayedUrl } = require('./delay-relay');
const {
  measureWebhookThroughput,
  printWebhookThroughput,
} = require('./webhook-throughput');

const ROOT = join(__dirname, '..');

function parseArguments(argv) {
  const options = {
    rounds: 3,
    duration: 5,
    // seconds each server runs each scenario, unmeasured, before the first round: the first
    // round on a fresh machine ran at half speed for every server, floor included
    warmup: 2,
    connections: 32,
    preload: 0,
    synchronous: 'normal',
    // sqlite, or postgres: the service and bare NestJS, each on a database of its own made on
    // the server that --postgres-url names (the other servers are SQLite-only)
    database: 'sqlite',
    'postgres-url': 'postgres://postgres@127.0.0.1:5432/postgres',
    // whole ms: with postgres, each server's connections go through a relay that adds this to
    // every round trip, as a network would (bench/delay-relay.js); 0 is loopback itself
    'relay-rtt': 0,
    smoke: false,
    out: '',
    // KEY=VALUE[,KEY=VALUE...] for the service only, to measure a setting (LOG_LEVEL=warn)
    'service-env': '',
    // a folder holding another build of the service (its dist/), run beside this one as
    // `service-against`: a change measured against its base in one run
    against: '',
    // the Node binary that runs the --against build (its CLI and its service): a runtime
    // change measured in one run, such as this build on Node 24 against main on Node 22
    'against-node': '',
    // Node options for the --against build's service, after the production flags (the last of
    // two contrary flags wins): `--against "$PWD" --against-node-args
    // --allocation-site-pretenuring` measures a production flag on against off, in one run
    'against-node-args': '',
    // KEY=VALUE[,...] for `service-against` instead of --service-env: `--against . --service-env
    // METRICS_PORT=0 --against-env ''` measures a setting on against off, in one run
    'against-env': undefined,
    // NAME=DIR[,NAME=DIR...]: more builds beside the service, each run as server NAME with the
    // service's settings; the table gives each one's ratio to the service (a feature's cost,
    // measured with throwaway builds that leave it out, in one run)
    variants: '',
  };
  for (let i = 0; i < argv.length; i += 1) {
    const name = argv[i].replace(/^--/, '');
    if (name === 'smoke') {
      Object.assign(options, {
        smoke: true,
        rounds: 1,
        duration: 0.4,
        warmup: 0,
        connections: 4,
      });
      continue;
    }
    if (!(name in options)) throw new Error(`unknown option --${name}`);
    const value = argv[++i];
    options[name] = typeof options[name] === 'number' ? Number(value) : value;
  }
  if (!['normal', 'full'].includes(options.synchronous))
    throw new Error('--synchronous is normal or full');
  const environment = (name) => {
    const assignments = options[name].split(',').filter(Boolean);
    if (
      assignments.some((assignment) => !/^[A-Z_][A-Z0-9_]*=/.test(assignment))
    )
      throw new Error(`--${name} is KEY=VALUE[,KEY=VALUE...]`);
    return Object.fromEntries(
      assignments.map((assignment) => {
        const at = assignment.indexOf('=');
        return [assignment.slice(0, at), assignment.slice(at + 1)];
      }),
    );
  };
  if (options.against && !existsSync(join(options.against, 'dist', 'main.js')))
    throw new Error(
      `--against needs a folder with a built service, ${join(options.against, 'dist', 'main.js')} is missing`,
    );
  options.variantBuilds = options.variants
    .split(',')
    .filter(Boolean)
    .map((assignment) => {
      const at = assignment.indexOf('=');
      const [name, dir] = [assignment.slice(0, at), assignment.slice(at + 1)];
      if (at < 1 || !existsSync(join(dir, 'dist', 'main.js')))
        throw new Error(
          `--variants is NAME=DIR[,NAME=DIR...], each DIR with a built service; got ${assignment}`,
        );
      return { name, dir };
    });
  if (
    (options['against-node'] || options['against-node-args']) &&
    !options.against
  )
    throw new Error('--against-node and --against-node-args go with --against');
  options.againstNode = options['against-node'] || process.execPath;
  options.againstNodeArgs = options['against-node-args']
    .split(' ')
    .filter(Boolean);
  if (options.database !== 'sqlite' && options.database !== 'postgres')
    throw new Error('--database is sqlite or postgres');
  if (!Number.isInteger(options['relay-rtt']) || options['relay-rtt'] < 0)
    throw new Error('--relay-rtt is a whole number of milliseconds');
  if (options['relay-rtt'] > 0 && options.database !== 'postgres')
    throw new Error('--relay-rtt goes with --database postgres');
  if (options['against-env'] !== undefined && !options.against)
    throw new Error('--against-env goes with --against');
  options.serviceEnv = environment('service-env');
  options.againstEnv =
    options['against-env'] === undefined
      ? options.serviceEnv
      : environment('against-env');
  return options;
}

const SERVERS = [
  { name: 'service', script: join(ROOT, 'dist', 'main.js'), isService: true },
  { name: 'floor', script: join(__dirname, 'floor-server.js') },
  { name: 'peer', script: join(__dirname, 'peer-server.js') },
  {
    name: 'peer-hardened',
    script: join(__dirname, 'peer-server.js'),
    env: { PEER_HARDENED: '1' },
  },
  { name: 'nest', script: join(__dirname, 'nest-server.js') },
];

/** The service's production flags (built-service.js); the other servers run with the same. */
const NODE_FLAGS = PRODUCTION_NODE_FLAGS;

/** Plants every database starts with, for the reads to find. */
const SEEDED = 10_000;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (
        server.address()
      );
      server.close(() => resolve(port));
    });
  });
}

/**
 * A database with the service's schema (its own migrations, through the CLI of the build in
 * `root`) and a token.
 */
function prepareDatabase(file, preload, root = ROOT, node = process.execPath) {
  // an empty file, which the CLI migrates: it creates no database of its own
  writeFileSync(file, '', { flag: 'a' });
  const created = execFileSync(
    node,
    [join(root, 'dist', 'cli.js'), 'tokens', 'create', '--name', 'bench'],
    {
      env: { PATH: process.env.PATH, DATABASE_URL: `sqlite:${file}` },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  const token = created.trimEnd().split('\n').pop();
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  const insert = db.prepare(
    'INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)',
  );
  const total = Math.max(SEEDED, preload);
  const insertChunk = db.transaction((from, to) => {
    for (let id = from; id < to; id += 1)
      insert.run(id, `plant ${id}`, id % 2 ? 'even' : null);
  });
  for (let from = 1; from <= total; from += 50_000)
    insertChunk(from, Math.min(from + 50_000, total + 1));
  db.close();
  return token;
}

function readRssBytes(pid, field) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? 0);
  return kb * 1024;
}

async function startServer(server, file, options, databaseUrl) {
  const port = await freePort();
  const child = spawn(
    server.node ?? process.execPath,
    [...NODE_FLAGS, ...(server.nodeArgs ?? []), server.script],
    {
      // the database's folder: never the developer's .env, which the service reads from its own
      cwd: dirname(file),
      env: {
        PATH: process.env.PATH,
        NODE_ENV: 'production',
        PORT: String(port),
        HOST: '127.0.0.1',
        DATABASE_URL: databaseUrl ?? `sqlite:${file}`,
        DATABASE_FILE: file,
        DB_SYNCHRONOUS: options.synchronous,
        // one token drives every request here: the per-token limit would turn most into 429s
        RATE_LIMIT_PER_TOKEN: '1000000000',
        ...server.env,
        ...(server.isService
          ? server.name === 'service-against'
            ? options.againstEnv
            : options.serviceEnv
          : {}),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const base = `http://127.0.0.1:${port}`;
  for (let tries = 0; ; tries += 1) {
    try {
      await fetch(`${base}/plants`);
      break;
    } catch {
      if (tries > 300 || child.exitCode !== null)
        throw new Error(`${server.name} did not start`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return { ...server, child, base, port };
}

/**
 * The PostgreSQL twin of prepareDatabase: a database of its own on the server `adminUrl`
 * names, migrated by the CLI of the build in `root`, seeded alike. Resolves to its URL and
 * the token.
 */
async function preparePostgresDatabase(
  adminUrl,
  name,
  preload,
  root = ROOT,
  node = process.execPath,
) {
  const { Client } = require('pg');
  const database = `plant_bench_${process.pid}_${name.replace(/-/g, '_')}`;
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${database}`);
    await admin.query(`CREATE DATABASE ${database}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  const created = execFileSync(
    node,
    [join(root, 'dist', 'cli.js'), 'tokens', 'create', '--name', 'bench'],
    {
      env: { PATH: process.env.PATH, DATABASE_URL: url.href },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  );
  const token = created.trimEnd().split('\n').pop();
  const seeding = new Client({ connectionString: url.href });
  await seeding.connect();
  try {
    await seeding.query(
      "INSERT INTO plants (id, name, tag) SELECT i, 'plant ' || i, CASE WHEN i % 2 = 1 THEN 'even' END FROM generate_series(1, $1::bigint) AS i",
      [Math.max(SEEDED, preload)],
    );
    await seeding.query('VACUUM ANALYZE plants');
  } finally {
    await seeding.end();
  }
  return { url: url.href, token, database };
}

async function dropPostgresDatabases(adminUrl, databases) {
  const { Client } = require('pg');
  const admin = new Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    for (const database of databases)
      await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

function scenarios(token, round) {
  let nextId = 1_000_000_000_000 + round * 100_000_000;
  // the keyed creates' ids, apart from the plain creates' of the same round
  let keyedId = 5_000_000_000_000 + round * 100_000_000;
  const auth = { authorization: `Bearer ${token}` };
  return [
    {
      name: 'POST /plants',
      requests: [
        {
          method: 'POST',
          path: '/plants',
          headers: { ...auth, 'content-type': 'application/json' },
          setupRequest: (request) => ({
            ...request,
            body: `{"id":${(nextId += 1)},"name":"Bench Fern","tag":"bench"}`,
          }),
        },
      ],
    },
    {
      // what a create with an Idempotency-Key costs over one without (service only: the peers
      // have no such thing); each request has a key of its own, as each create of a client does
      name: 'POST /plants with Idempotency-Key',
      onlyService: true,
      requests: [
        {
          method: 'POST',
          path: '/plants',
          setupRequest: (request) => {
            keyedId += 1;
            return {
              ...request,
              headers: {
                ...auth,
                'content-type': 'application/json',
                'idempotency-key': `bench-${keyedId}`,
              },
              body: `{"id":${keyedId},"name":"Bench Fern","tag":"bench"}`,
            };
          },
        },
      ],
    },
    {
      name: 'GET /plants/{id}',
      requests: [
        {
          method: 'GET',
          headers: auth,
          setupRequest: (request) => ({
            ...request,
            path: `/plants/${1 + Math.floor(Math.random() * SEEDED)}`,
          }),
        },
      ],
    },
    {
      name: 'GET /plants?limit=100',
      requests: [{ method: 'GET', path: '/plants?limit=100', headers: auth }],
    },
  ];
}

async function drive(server, scenario, options) {
  let peakRss = readRssBytes(server.child.pid, 'VmRSS');
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, readRssBytes(server.child.pid, 'VmRSS'));
  }, 100);
  const result = await autocannon({
    url: server.base,
    connections: options.connections,
    duration: options.duration,
    requests: scenario.requests,
  });
  clearInterval(sampler);
  return {
    requestsPerSecond: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts + result.non2xx,
    peakRssBytes: peakRss,
  };
}

const median = (values) =>
  [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

async function main() {
  const options = parseArguments(process.argv.slice(2));
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-bench-'));
  const started = [];
  /** @type {string[]} */
  const postgresDatabases = [];
  /** @type {(() => Promise<void>)[]} */
  const relays = [];
  // with --preload, the service also runs on the small table in the same run, for the ratio
  const onPostgres = options.database === 'postgres';
  const servers = [
    ...SERVERS.filter((s) => !onPostgres || s.isService || s.name === 'nest'),
    ...(options.preload
      ? [{ ...SERVERS[0], name: 'service-small-table', small: true }]
      : []),
    ...(options.against
      ? [
          {
            ...SERVERS[0],
            name: 'service-against',
            script: join(options.against, 'dist', 'main.js'),
            root: options.against,
            node: options.againstNode,
            nodeArgs: options.againstNodeArgs,
          },
        ]
      : []),
    ...options.variantBuilds.map(({ name, dir }) => ({
      ...SERVERS[0],
      name,
      script: join(dir, 'dist', 'main.js'),
      root: dir,
    })),
  ];
  try {
    const files = Object.fromEntries(
      servers.map((s) => [s.name, join(folder, `${s.name}.sqlite`)]),
    );
    /** @type {Record<string, string>} */
    const tokens = {};
    /** @type {Record<string, string>} */
    const databaseUrls = {};
    for (const s of servers) {
      const preload = s.small ? 0 : options.preload;
      if (onPostgres) {
        const prepared = await preparePostgresDatabase(
          options['postgres-url'],
          s.name,
          preload,
          s.root,
          s.node,
        );
        postgresDatabases.push(prepared.database);
        tokens[s.name] = prepared.token;
        databaseUrls[s.name] = prepared.url;
        // migrated and seeded directly; served through a relay of its own
        if (options['relay-rtt'] > 0) {
          const relayed = await relayedUrl(prepared.url, options['relay-rtt']);
          relays.push(relayed.close);
          databaseUrls[s.name] = relayed.url;
        }
      } else {
        tokens[s.name] = prepareDatabase(
          files[s.name],
          preload,
          s.root,
          s.node,
        );
      }
    }
    for (const server of servers)
      started.push(
        await startServer(
          server,
          files[server.name],
          options,
          databaseUrls[server.name],
        ),
      );

    /** @type {Record<string, Record<string, any[]>>} */
    const runs = {};
    /** @type {Record<string, Record<string, number>>} */
    const warmups = {};
    /**
     * Every scenario of `round` on each of `servers` in turn for `duration` seconds, each
     * measurement handed to `record` with its scenario's name and its server's.
     */
    const driveRound = async (servers, round, duration, record) => {
      for (const [index] of scenarios('', round).entries()) {
        for (const server of servers) {
          const scenario = scenarios(tokens[server.name], round)[index];
          if (scenario.onlyService && !server.isService) continue;
          const measured = await drive(server, scenario, { ...options, duration });
          record(scenario.name, server.name, measured);
        }
      }
    };
    if (options.warmup > 0) {
      // round -1's ids: apart from the seeded plants and from every measured round's
      await driveRound(started, -1, options.warmup, (scenario, server, measured) => {
        (warmups[scenario] ??= {})[server] = measured.requestsPerSecond;
      });
    }
    for (let round = 0; round < options.rounds; round += 1) {
      // rotate the order each round so that machine noise hits every server alike
      const order = started.map(
        (_, i) => started[(i + round) % started.length],
      );
      await driveRound(order, round, options.duration, (scenario, server, measured) => {
        ((runs[scenario] ??= {})[server] ??= []).push(measured);
      });
    }

    const summary = Object.entries(runs).map(([scenario, byServer]) => {
      const servers = Object.fromEntries(
        Object.entries(byServer).map(([name, measured]) => [
          name,
          {
            requestsPerSecond: median(measured.map((m) => m.requestsPerSecond)),
            p50Ms: median(measured.map((m) => m.p50)),
            p99Ms: median(measured.map((m) => m.p99)),
            errors: measured.reduce((sum, m) => sum + m.errors, 0),
            peakRssMb:
              Math.max(...measured.map((m) => m.peakRssBytes)) / 1024 / 1024,
            // each round's req/s, in the order run: the median hides a cold first round
            roundsRequestsPerSecond: measured.map((m) => m.requestsPerSecond),
          },
        ]),
      );
      // undefined where a server is not in this run (on PostgreSQL, the SQLite-only ones)
      const ratio = (a, b) =>
        servers[a] && servers[b]
          ? servers[a].requestsPerSecond / servers[b].requestsPerSecond
          : undefined;
      return {
        scenario,
        servers,
        // req/s of each server's unmeasured warm-up: in the JSON, not in the table
        ...(options.warmup > 0 && {
          warmupRequestsPerSecond: warmups[scenario],
        }),
        serviceToFloor: ratio('service', 'floor'),
        serviceToPeer: ratio('service', 'peer'),
        serviceToNest: ratio('service', 'nest'),
        // the same ratio within each round, where both ran a few seconds apart: its spread is
        // what the machine's drift does to the one above
        serviceToNestByRound:
          byServer.service && byServer.nest
            ? byServer.service.map(
                (m, round) =>
                  m.requestsPerSecond / byServer.nest[round].requestsPerSecond,
              )
            : undefined,
        nestToPeer: ratio('nest', 'peer'),
        ...(scenario === 'POST /plants with Idempotency-Key' && {
          keyedToUnkeyed:
            servers.service &&
            servers.service.requestsPerSecond /
              median(
                runs['POST /plants'].service.map((m) => m.requestsPerSecond),
              ),
        }),
        serviceToHardenedPeer: ratio('service', 'peer-hardened'),
        ...(options.preload && {
          serviceToSmallTable: ratio('service', 'service-small-table'),
        }),
        ...(options.variantBuilds.length > 0 && {
          variantToService: Object.fromEntries(
            options.variantBuilds.map(({ name }) => [
              name,
              ratio(name, 'service'),
            ]),
          ),
        }),
        ...(options.against && {
          serviceToAgainst: ratio('service', 'service-against'),
          againstToNest: ratio('service-against', 'nest'),
        }),
      };
    });

    // the HTTP servers are stopped first: the dispatcher is measured on a quiet machine
    await stopServers(started.splice(0));
    const webhooks = [];
    const builds = [
      ['service', ROOT, process.execPath, []],
      ...(options.against
        ? [
            [
              'service-against',
              options.against,
              options.againstNode,
              options.againstNodeArgs,
            ],
          ]
        : []),
    ];
    for (const [name, root, node, nodeArgs] of builds) {
      webhooks.push(
        await measureWebhookThroughput({
          name,
          root,
          node,
          nodeArgs,
          ...(options.smoke
            ? { plants: 200, seconds: 5 }
            : { plants: 5000, seconds: 10 }),
          // the engine of the run, and its relay
          ...(onPostgres && {
            postgresUrl: options['postgres-url'],
            relayRtt: options['relay-rtt'],
          }),
        }),
      );
    }

    const report = {
      date: new Date().toISOString(),
      node: process.version,
      ...(options.against && {
        againstNode: execFileSync(options.againstNode, ['--version'], {
          encoding: 'utf8',
        }).trim(),
      }),
      options,
      seeded: Math.max(SEEDED, options.preload),
      ...(onPostgres && { postgresDatabases }),
      scenarios: summary,
      webhooks,
    };
    printTable(report);
    for (const { scenario, keyedToUnkeyed } of summary) {
      if (keyedToUnkeyed !== undefined) {
        console.log(
          `${scenario}: ${keyedToUnkeyed.toFixed(2)} of the throughput of POST /plants without one`,
        );
      }
    }
    for (const { scenario, serviceToNestByRound } of summary) {
      if (serviceToNestByRound !== undefined && serviceToNestByRound.length > 1) {
        console.log(
          `${scenario}: service/nest round by round ${serviceToNestByRound.map((r) => r.toFixed(2)).join(', ')}`,
        );
      }
    }
    printWebhookThroughput(webhooks);
    const out =
      options.out ||
      (options.smoke
        ? join(folder, 'smoke.json')
        : join(
            __dirname,
            'results',
            `${report.date.replace(/[:.]/g, '-')}${options.preload ? `-preload-${options.preload}` : ''}.json`,
          ));
    mkdirSync(join(out, '..'), { recursive: true });
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nwrote ${out}`);
    if (options.smoke) console.log(`SMOKE ${JSON.stringify(report)}`);
  } finally {
    await stopServers(started);
    await Promise.all(relays.map((close) => close()));
    rmSync(folder, { recursive: true, force: true });
    if (postgresDatabases.length > 0)
      await dropPostgresDatabases(options['postgres-url'], postgresDatabases);
  }
}

async function stopServers(started) {
  for (const server of started) server.child.kill('SIGTERM');
  await Promise.all(
    started.map(
      (s) =>
        new Promise((resolve) =>
          s.child.exitCode !== null
            ? resolve(0)
            : s.child.once('exit', resolve),
        ),
    ),
  );
}

function printTable(report) {
  const fixed = (ratio) => (ratio === undefined ? '' : ratio.toFixed(2));
  const rows = [
    [
      'scenario',
      'server',
      'req/s',
      'p50 ms',
      'p99 ms',
      'errors',
      'peak RSS MB',
      'service/floor',
      'service/peer',
      'service/nest',
      'nest/peer',
      'service/peer-hardened',
      ...(report.options.preload ? ['service/small-table'] : []),
      ...(report.options.against ? ['service/against', 'against/nest'] : []),
      ...(report.options.variantBuilds.length > 0 ? ['variant/service'] : []),
    ],
  ];
  for (const {
    scenario,
    servers,
    serviceToFloor,
    serviceToPeer,
    serviceToNest,
    nestToPeer,
    serviceToHardenedPeer,
    serviceToSmallTable,
    serviceToAgainst,
    againstToNest,
    variantToService,
  } of report.scenarios) {
    for (const [name, m] of Object.entries(servers)) {
      rows.push([
        scenario,
        name,
        m.requestsPerSecond.toFixed(0),
        String(m.p50Ms),
        String(m.p99Ms),
        String(m.errors),
        m.peakRssMb.toFixed(0),
        name === 'service' ? fixed(serviceToFloor) : '',
        name === 'service' ? fixed(serviceToPeer) : '',
        name === 'service' ? fixed(serviceToNest) : '',
        name === 'nest' ? fixed(nestToPeer) : '',
        name === 'service' ? fixed(serviceToHardenedPeer) : '',
        ...(report.options.preload
          ? [name === 'service' ? fixed(serviceToSmallTable) : '']
          : []),
        ...(report.options.against
          ? [
              name === 'service' ? fixed(serviceToAgainst) : '',
              name === 'service-against' ? fixed(againstToNest) : '',
            ]
          : []),
        ...(report.options.variantBuilds.length > 0
          ? [fixed(variantToService?.[name])]
          : []),
      ]);
    }
  }
  const widths = rows[0].map((_, c) =>
    Math.max(...rows.map((r) => r[c].length)),
  );
  console.log(
    `plant store benchmark: ${report.options.rounds} rounds of ${report.options.duration} s at ${report.options.connections} connections, ` +
      `${report.seeded} plants stored, ${databaseLabel(report.options)}, ${report.node}` +
      (report.againstNode
        ? ` (service-against on ${report.againstNode}` +
          (report.options['against-node-args']
            ? ` ${report.options['against-node-args']})`
            : ')')
        : ''),
  );
  for (const row of rows)
    console.log(row.map((cell, c) => cell.padEnd(widths[c])).join('  '));
}

/** The engine the servers ran on, as the table's heading names it. */
function databaseLabel(options) {
  if (options.database !== 'postgres') {
    return `SQLite synchronous=${options.synchronous}`;
  }
  return postgresLabel(options['relay-rtt']);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
