import { spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { createConnection, createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Client } from 'pg';
import { POSTGRES_ADMIN_URL } from './helpers/postgres';
import { ROOT } from './helpers/service-process';
import { makeTempFolder } from './helpers/test-app';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { startDelayRelay } = require('../bench/delay-relay') as {
  startDelayRelay: (
    target: { host: string; port: number },
    roundTripMs: number,
  ) => Promise<{ port: number; close: () => Promise<void> }>;
};

interface ServerFigures {
  requestsPerSecond: number;
  /** Each round's, in the order run; requestsPerSecond is their median. */
  roundsRequestsPerSecond: number[];
  p50Ms: number;
  p99Ms: number;
  errors: number;
  peakRssMb: number;
}

interface BenchReport {
  postgresDatabases?: string[];
  scenarios: {
    scenario: string;
    servers: Record<string, ServerFigures>;
    serviceToFloor: number;
    serviceToPeer?: number;
    serviceToNest: number;
    /** service/nest within each round, where both ran a few seconds apart. */
    serviceToNestByRound?: number[];
    /** Each server's req/s in the unmeasured warm-up before the first round (--warmup). */
    warmupRequestsPerSecond?: Record<string, number>;
    nestToPeer: number;
    serviceToHardenedPeer: number;
    serviceToAgainst?: number;
    variantToService?: Record<string, number>;
    /** The keyed create's throughput over the plain create's, on the service. */
    keyedToUnkeyed?: number;
  }[];
  webhooks: {
    name: string;
    backlog: number;
    delivered: number;
    deliveriesPerSecond: number;
    slowReceiverMaxOpen: number;
    /** The engine the dispatcher ran on, and its relay. */
    database: string;
  }[];
}

function smokeRun(...args: string[]): { report: BenchReport; stdout: string } {
  const result = spawnSync(
    process.execPath,
    [join(ROOT, 'bench', 'run.js'), '--smoke', ...args],
    { cwd: ROOT, encoding: 'utf8', timeout: 120_000 },
  );
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  const line = result.stdout
    .split('\n')
    .find((text) => text.startsWith('SMOKE '));
  return {
    report: JSON.parse(line?.slice('SMOKE '.length) ?? 'null') as BenchReport,
    stdout: result.stdout,
  };
}

/** What bench/run.js answers options it refuses before starting anything. */
function refusalOf(...args: string[]): {
  status: number | null;
  stderr: string;
} {
  const { status, stderr } = spawnSync(
    process.execPath,
    [join(ROOT, 'bench', 'run.js'), ...args],
    { cwd: ROOT, encoding: 'utf8', timeout: 30_000 },
  );
  return { status, stderr };
}

// The harness behind `npm run bench`, run for a second or so so that it never rots. No speed
// is asserted here: numbers come from `npm run bench` and live in bench/README.md.
const KEYED = 'POST /plants with Idempotency-Key';

describe('the benchmark harness (bench/run.js --smoke)', () => {
  it('drives the service, the floor, the peer bare and hardened, bare NestJS, another build (--against) and a variant (--variants) through every scenario without an error', () => {
    // --against this very checkout: the option's plumbing, not a comparison
    const { report, stdout } = smokeRun(
      '--against',
      ROOT,
      '--variants',
      `same-build=${ROOT}`,
    );

    expect(report.scenarios.map(({ scenario }) => scenario)).toEqual([
      'POST /plants',
      KEYED,
      'GET /plants/{id}',
      'GET /plants?limit=100',
    ]);
    const [keyed] = report.scenarios.splice(1, 1);
    // the service's builds only: the peers have no Idempotency-Key
    expect(Object.keys(keyed.servers).sort()).toEqual([
      'same-build',
      'service',
      'service-against',
    ]);
    for (const figures of Object.values(keyed.servers)) {
      expect(figures.errors).toBe(0);
    }
    expect(keyed.keyedToUnkeyed).toBeGreaterThan(0);
    expect(stdout).toMatch(
      /^POST \/plants with Idempotency-Key: \d+\.\d\d of the throughput of POST \/plants without one$/m,
    );
    for (const {
      servers,
      serviceToFloor,
      serviceToPeer,
      serviceToNest,
      nestToPeer,
      serviceToHardenedPeer,
      serviceToAgainst,
      variantToService,
    } of report.scenarios) {
      expect(Object.keys(servers).sort()).toEqual([
        'floor',
        'nest',
        'peer',
        'peer-hardened',
        'same-build',
        'service',
        'service-against',
      ]);
      expect(variantToService?.['same-build']).toBeGreaterThan(0);
      for (const figures of Object.values(servers)) {
        expect(figures.errors).toBe(0);
        expect(figures.requestsPerSecond).toBeGreaterThan(0);
        expect(figures.p99Ms).toBeGreaterThanOrEqual(figures.p50Ms);
        expect(figures.peakRssMb).toBeGreaterThan(0);
      }
      expect(serviceToFloor).toBeGreaterThan(0);
      expect(serviceToPeer).toBeGreaterThan(0);
      expect(serviceToNest).toBeGreaterThan(0);
      expect(nestToPeer).toBeGreaterThan(0);
      expect(serviceToHardenedPeer).toBeGreaterThan(0);
      expect(serviceToAgainst).toBeGreaterThan(0);
    }
    expect(stdout).toMatch(
      /^scenario\s+server\s+req\/s\s+p50 ms\s+p99 ms\s+errors\s+peak RSS MB/m,
    );
    // the dispatcher drained its backlog to the fast receiver, the slow one held its share
    expect(report.webhooks.map(({ name }) => name)).toEqual([
      'service',
      'service-against',
    ]);
    for (const figures of report.webhooks) {
      expect(figures.delivered).toBe(figures.backlog);
      expect(figures.deliveriesPerSecond).toBeGreaterThan(0);
      expect(figures.slowReceiverMaxOpen).toBeGreaterThan(0);
      // WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION's default: half of the 64 slots (the build
      // measured against may have had a quarter)
      expect(figures.slowReceiverMaxOpen).toBeLessThanOrEqual(32);
    }
    expect(stdout).toMatch(/deliveries\/s to the fast receiver/);
  });

  it('drives the service and bare NestJS on PostgreSQL (--database postgres), each on a database of its own, dropped after; warmed up (--warmup), and round by round (--rounds)', async () => {
    const { report, stdout } = smokeRun(
      '--database',
      'postgres',
      '--postgres-url',
      POSTGRES_ADMIN_URL,
      '--rounds',
      '2',
      '--warmup',
      '0.2',
    );
    expect(stdout).toContain('PostgreSQL');
    for (const {
      scenario,
      servers,
      serviceToNest,
      serviceToNestByRound,
      warmupRequestsPerSecond,
      serviceToPeer,
    } of report.scenarios) {
      // every server ran every scenario before the measured rounds
      expect(Object.keys(warmupRequestsPerSecond ?? {}).sort()).toEqual(
        Object.keys(servers).sort(),
      );
      for (const figures of Object.values(warmupRequestsPerSecond ?? {}))
        expect(figures).toBeGreaterThan(0);
      for (const figures of Object.values(servers))
        expect(figures.roundsRequestsPerSecond).toHaveLength(2);
      if (scenario === KEYED) {
        expect(Object.keys(servers)).toEqual(['service']);
        expect(servers.service.errors).toBe(0);
        expect(serviceToNestByRound).toBeUndefined();
        continue;
      }
      expect(Object.keys(servers).sort()).toEqual(['nest', 'service']);
      for (const figures of Object.values(servers)) {
        expect(figures.errors).toBe(0);
        expect(figures.requestsPerSecond).toBeGreaterThan(0);
      }
      expect(serviceToNest).toBeGreaterThan(0);
      expect(serviceToNestByRound).toEqual(
        servers.service.roundsRequestsPerSecond.map(
          (rate, round) => rate / servers.nest.roundsRequestsPerSecond[round],
        ),
      );
      expect(stdout).toContain(
        `${scenario}: service/nest round by round ${serviceToNestByRound?.map((ratio) => ratio.toFixed(2)).join(', ')}`,
      );
      // the SQLite-only servers are not in the run, nor their ratios
      expect(serviceToPeer).toBeUndefined();
    }
    const admin = new Client({ connectionString: POSTGRES_ADMIN_URL });
    await admin.connect();
    try {
      expect(report.postgresDatabases).toHaveLength(2);
      const left = await admin.query(
        'SELECT datname FROM pg_database WHERE datname = ANY($1)',
        [report.postgresDatabases],
      );
      expect(left.rows).toEqual([]);
    } finally {
      await admin.end();
    }
  });

  it('drives them through a relay adding a round trip (--relay-rtt), and refuses one without PostgreSQL', () => {
    const { report, stdout } = smokeRun(
      '--database',
      'postgres',
      '--postgres-url',
      POSTGRES_ADMIN_URL,
      '--relay-rtt',
      '1',
    );
    expect(stdout).toContain(
      'PostgreSQL through a relay adding 1 ms a round trip',
    );
    for (const { servers } of report.scenarios) {
      for (const figures of Object.values(servers)) {
        expect(figures.errors).toBe(0);
        expect(figures.requestsPerSecond).toBeGreaterThan(0);
      }
    }
    // the dispatcher too, on the run's engine and through its relay
    expect(report.webhooks).toEqual([
      expect.objectContaining({
        database: 'PostgreSQL through a relay adding 1 ms a round trip',
        delivered: report.webhooks[0].backlog,
      }),
    ]);
    const refused = refusalOf('--relay-rtt', '1');
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain(
      '--relay-rtt goes with --database postgres',
    );
  });

  it('relays every byte in order, each round trip held at least the delay (bench/delay-relay.js)', async () => {
    const echo = createServer((socket) => socket.pipe(socket));
    await new Promise<void>((resolve) => echo.listen(0, '127.0.0.1', resolve));
    const relay = await startDelayRelay(
      { host: '127.0.0.1', port: (echo.address() as AddressInfo).port },
      3,
    );
    const client = createConnection({ host: '127.0.0.1', port: relay.port });
    try {
      await once(client, 'connect');
      const received: Buffer[] = [];
      client.on('data', (chunk: Buffer) => received.push(chunk));
      const started = performance.now();
      client.write('first');
      await once(client, 'data');
      expect(performance.now() - started).toBeGreaterThanOrEqual(3);
      const sent = Array.from({ length: 200 }, (_, i) => `${i},`).join('');
      for (const part of sent.match(/.{1,7}/g)!) client.write(part);
      const whole = `first${sent}`;
      while (Buffer.concat(received).length < whole.length) {
        await once(client, 'data');
      }
      expect(Buffer.concat(received).toString()).toBe(whole);
    } finally {
      client.destroy();
      await relay.close();
      await new Promise((resolve) => echo.close(resolve));
    }
  });

  it('refuses --against a folder without a built service', () => {
    const result = refusalOf('--against', join(ROOT, 'docs'));
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      '--against needs a folder with a built service',
    );
  });

  it('injects each callgrind scenario into the built app without an error (bench/callgrind.js, without valgrind)', () => {
    const folder = makeTempFolder();
    try {
      for (const scenario of ['get-by-id', 'post', 'list']) {
        const result = spawnSync(
          process.execPath,
          [join(ROOT, 'bench', 'callgrind.js'), '--worker', scenario, '20'],
          {
            cwd: ROOT,
            encoding: 'utf8',
            timeout: 60_000,
            env: {
              PATH: process.env.PATH,
              LOG_LEVEL: 'silent',
              DATABASE_URL: `sqlite:${join(folder.path, `${scenario}.sqlite`)}`,
            },
          },
        );
        expect(result.stderr).toBe('');
        expect(result.status).toBe(0);
      }
    } finally {
      folder.remove();
    }
  });

  it('refuses a malformed --service-env before starting anything', () => {
    const result = refusalOf('--service-env', 'log_level');
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      '--service-env is KEY=VALUE[,KEY=VALUE...]',
    );
  });
});
