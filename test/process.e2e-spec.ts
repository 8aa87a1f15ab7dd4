import { describeWithRedis, redisTestEnv } from './helpers/redis';
import { spawnSync } from 'node:child_process';
import { connect, createServer, type AddressInfo } from 'node:net';
import { once } from 'node:events';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { makeTempFolder } from './helpers/test-app';
import {
  CLI,
  MAIN,
  ROOT,
  runCliProcess,
  runNodeScript,
  runServiceToExit,
  startServiceProcess,
  type LogLine,
} from './helpers/service-process';
import { freePort } from './helpers/ports';
import { eventually } from './helpers/webhook-receiver';
import { paceOf, testLimit } from './helpers/pace';

/** A loopback port that another server holds, as a port in use is. */
async function heldPort() {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  return { port: (holder.address() as AddressInfo).port, holder };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** A new database's migrations are said before the rest, a line each (test/upgrades.e2e-spec.ts). */
function withoutMigrations(lines: LogLine[]): LogLine[] {
  return lines.filter((line) => line.context !== 'Migrations');
}

describe('the service process (node dist/main.js)', () => {
  let folder: ReturnType<typeof makeTempFolder>;

  beforeEach(() => {
    folder = makeTempFolder();
  });

  afterEach(() => folder.remove());

  it.each([
    ['the service', MAIN, []],
    ['its tool', CLI, ['tokens', 'list']],
  ])(
    '%s on a Node.js that package.json does not admit says so and exits 1, before a native module crashes it',
    async (_name, script, args) => {
      // Node.js 20 as the process sees it, whatever runs the tests
      const olderNode = join(folder.path, 'node-20.js');
      writeFileSync(
        olderNode,
        "Object.defineProperty(process.versions, 'node', { value: '20.20.2' });",
      );
      const { status, stdout, stderr } = await runNodeScript(
        ['-r', olderNode, script, ...args],
        { DATABASE_URL: `sqlite:${join(folder.path, 'store.sqlite')}` },
        folder.path,
      );
      expect([status, stdout, stderr]).toEqual([
        1,
        '',
        `the plant store needs Node.js ^22.22.3 || ^24.15.0 || ^26.0.0 (package.json engines), and this is Node.js 20.20.2 (${process.execPath}): put a supported Node.js first on PATH, as the README's Quick start shows\n`,
      ]);
      // nothing was opened: no database file
      expect(existsSync(join(folder.path, 'store.sqlite'))).toBe(false);
    },
  );

  it('creates data/plant-store.sqlite and its folder, private to its user, by default', async () => {
    const service = await startServiceProcess({}, folder.path);
    try {
      const dataFolder = join(folder.path, 'data');
      expect(statSync(dataFolder).mode & 0o777).toBe(0o700);
      expect(statSync(join(dataFolder, 'plant-store.sqlite')).isFile()).toBe(
        true,
      );
      const ready = await fetch(`${service.baseUrl}/health/ready`);
      expect(ready.status).toBe(200);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });

  it.each([
    [
      'PORT',
      'eighty',
      /^PORT must be an integer between 0 and 65535, got "eighty"$/,
    ],
    ['PORT', '70000', /^PORT must be/],
    [
      'DATABASE_URL',
      'mysql://localhost/plants',
      /^DATABASE_URL must be sqlite:<path>, sqlite::memory: or postgres:/,
    ],
    [
      'LOG_LEVEL',
      'loud',
      /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent/,
    ],
    ['BODY_LIMIT', 'huge', /^BODY_LIMIT must be a size/],
    [
      'DB_SYNCHRONOUS',
      'off',
      /^DB_SYNCHRONOUS must be one of normal, full, got "off"$/,
    ],
    [
      'WEBHOOKS_TIMEOUT',
      'soon',
      /^WEBHOOKS_TIMEOUT must be a positive duration/,
    ],
    [
      'WEBHOOKS_ALLOW_PRIVATE_NETWORKS',
      'yes',
      /^WEBHOOKS_ALLOW_PRIVATE_NETWORKS must be true or false/,
    ],
    ['BODY_LIMIT', '0', /^BODY_LIMIT must be a size/],
    [
      'PUBLIC_BASE_URL',
      'ftp://example.test',
      /^PUBLIC_BASE_URL must be an absolute http or https URL/,
    ],
  ])(
    'refuses to start when %s is %j, with one JSON line naming it',
    async (name, value, message) => {
      const { status, lines } = await runServiceToExit(
        { [name]: value },
        folder.path,
      );
      expect(status).not.toBe(0);
      expect(status).not.toBeNull();
      expect(lines).toHaveLength(1);
      const [line] = lines;
      expect(line.level).toBe(60);
      expect(line.msg.replace('the service could not start: ', '')).toMatch(
        message,
      );
      expect(line).not.toHaveProperty('err');
    },
  );

  it.each(['s3cr/et', 's3cr#et', 's3cr?et'])(
    'refuses a Redis password holding %j before it listens, and shows none of it',
    async (password) => {
      const { status, lines, output } = await runServiceToExit(
        { REDIS_URL: `redis://plants:${password}@127.0.0.1:6379/0` },
        folder.path,
      );
      expect(status).toBe(1);
      expect(lines).toHaveLength(1);
      expect(lines[0].msg).toBe(
        'the service could not start: REDIS_URL must be redis://[user:password@]host:port[/db] or rediss://..., with any /, #, ?, @ or % of the password percent-encoded (%2F, %23, %3F, %40, %25), got "redis://***@127.0.0.1:6379/0"',
      );
      expect(output).not.toContain('s3cr');
    },
  );

  it("writes Node's own warnings as JSON lines, not Node's plain text", () => {
    const result = spawnSync(
      process.execPath,
      [
        '-e',
        `const { logProcessWarnings } = require(${JSON.stringify(join(ROOT, 'dist', 'platform', 'logging', 'pino-logger.js'))});
         logProcessWarnings({ warn: (fields) => console.log(JSON.stringify(fields)) });
         process.emitWarning('an old API', { type: 'DeprecationWarning', code: 'DEP0999' });`,
      ],
      { encoding: 'utf8', timeout: 20_000 },
    );
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual({
      msg: 'an old API',
      warning: 'DeprecationWarning',
      code: 'DEP0999',
    });
  });

  it('says in one line, and exits 1, when its port is in use', async () => {
    const { port, holder } = await heldPort();
    try {
      const { status, output, lines } = await runServiceToExit(
        { HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info' },
        folder.path,
      );
      expect(status).toBe(1);
      expect(withoutMigrations(lines)).toEqual([
        expect.objectContaining({
          level: 60,
          msg: `the service could not start: port ${port} on 127.0.0.1 is in use by another process: stop it, or set PORT to a free port`,
        }),
      ]);
      expect(withoutMigrations(lines)[0]).not.toHaveProperty('err');
      expect(output).not.toContain('Retrying');
    } finally {
      holder.close();
    }
  });

  it('says in one line, and exits 1, when METRICS_PORT is in use', async () => {
    const { port, holder } = await heldPort();
    try {
      const { status, lines } = await runServiceToExit(
        {
          HOST: '127.0.0.1',
          PORT: '0',
          METRICS_PORT: String(port),
          DATABASE_URL: 'sqlite::memory:',
        },
        folder.path,
      );
      expect(status).toBe(1);
      expect(withoutMigrations(lines)).toEqual([
        expect.objectContaining({
          level: 60,
          msg: `the service could not start: METRICS_PORT ${port} on 127.0.0.1 is in use by another process: stop it, or set METRICS_PORT to a free port`,
        }),
      ]);
    } finally {
      holder.close();
    }
  });

  it('names where its metrics are in its start line, and serves them there', async () => {
    const metricsPort = await freePort();
    const service = await startServiceProcess(
      {
        LOG_LEVEL: 'info',
        DATABASE_URL: 'sqlite::memory:',
        METRICS_PORT: String(metricsPort),
      },
      folder.path,
    );
    try {
      const metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
      await eventually(
        () => service.lines().find(({ msg }) => msg.includes(' listening at ')),
        (line) => line !== undefined,
        5000,
      );
      const start = service
        .lines()
        .find(({ msg }) => msg.includes(' listening at '));
      expect(start).toMatchObject({
        metrics: `metrics at ${metricsUrl}`,
        msg: expect.stringMatching(new RegExp(`; metrics at ${metricsUrl}$`)),
      });
      const scraped = await fetch(metricsUrl);
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toContain(
        'http_server_request_duration_seconds_count{http_request_method="GET",http_route="/health/live",http_response_status_code="200"}',
      );
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });

  it('says in one line, and exits 1, when its database cannot be written', async () => {
    const notAFolder = join(folder.path, 'a-file');
    writeFileSync(notAFolder, '');
    const database = join(notAFolder, 'plant-store.sqlite');
    const { status, lines } = await runServiceToExit(
      { DATABASE_URL: `sqlite:${database}`, LOG_LEVEL: 'info' },
      folder.path,
    );
    expect(status).toBe(1);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 60,
        msg: expect.stringMatching(
          new RegExp(
            `^the service could not start: cannot open the SQLite database ${escapeRegExp(database)} for writing \\(E[A-Z]+: .*\\): make ${escapeRegExp(notAFolder)} a folder this user can write, or set DATABASE_URL=sqlite:<path> to another place$`,
          ),
        ),
      }),
    ]);
  });

  it('reads .env in its working directory, under the environment', async () => {
    writeFileSync(
      join(folder.path, '.env'),
      'PUBLIC_BASE_URL=https://from-dotenv.example\nDATABASE_URL=sqlite:from-dotenv.sqlite\nPORT=1\n',
    );
    const service = await startServiceProcess({}, folder.path);
    try {
      const document = (await (
        await fetch(`${service.baseUrl}/openapi.json`)
      ).json()) as { servers: { url: string }[] };
      expect(document.servers[0].url).toBe('https://from-dotenv.example');
      expect(statSync(join(folder.path, 'from-dotenv.sqlite')).isFile()).toBe(
        true,
      );
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });

  it('reports every bad value before it stops, a line each', async () => {
    writeFileSync(join(folder.path, '.env'), 'BODY_LIMIT=huge\n');
    const { status, lines } = await runServiceToExit(
      { PORT: 'eighty', LOG_LEVEL: 'loud' },
      folder.path,
    );
    expect(status).toBe(1);
    expect(lines.map(({ level, msg }) => [level, msg])).toEqual([
      [
        60,
        'the service could not start: PORT must be an integer between 0 and 65535, got "eighty"',
      ],
      [
        60,
        expect.stringMatching(
          /^the service could not start: LOG_LEVEL must be one of /,
        ),
      ],
      [
        60,
        `the service could not start: BODY_LIMIT must be a size between 1 byte and 64mb such as 16kb, got "huge" (set in ${join(folder.path, '.env')})`,
      ],
    ]);
  });

  it('warns at boot of a variable that looks meant for it but is none of its settings', async () => {
    writeFileSync(join(folder.path, '.env'), 'WEBHOOKS_TIMEOUTS=3s\n');
    const service = await startServiceProcess(
      {
        DATABASE_URL: `sqlite:${join(folder.path, 'typos.sqlite')}`,
        LOG_LEVEL: 'info',
        RATE_LIMT_PER_TOKEN: '5',
      },
      folder.path,
    );
    try {
      service.child.kill('SIGTERM');
      await service.exited;
      const warnings = service
        .lines()
        .filter(({ msg }) =>
          msg.includes('is not a setting of the plant store'),
        );
      expect(warnings.map(({ level, msg }) => [level, msg]).sort()).toEqual([
        [
          40,
          'RATE_LIMT_PER_TOKEN is not a setting of the plant store and is ignored; the closest one is RATE_LIMIT_PER_TOKEN',
        ],
        [
          40,
          `WEBHOOKS_TIMEOUTS (set in ${join(folder.path, '.env')}) is not a setting of the plant store and is ignored; the closest one is WEBHOOKS_TIMEOUT`,
        ],
      ]);
    } finally {
      service.child.kill('SIGKILL');
    }
  });

  it('stops at a bad value in .env with one line naming the variable and the file', async () => {
    writeFileSync(join(folder.path, '.env'), 'BODY_LIMIT=huge\n');
    const { status, lines } = await runServiceToExit({}, folder.path);
    expect(status).toBe(1);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 60,
        msg: `the service could not start: BODY_LIMIT must be a size between 1 byte and 64mb such as 16kb, got "huge" (set in ${join(folder.path, '.env')})`,
      }),
    ]);
  });

  it('says one line when it is up, naming its URL, docs, database, rate limits, proxies, metrics and version, writes each line within a second, and one line when it stops', async () => {
    const service = await startServiceProcess(
      { LOG_LEVEL: 'info', DATABASE_URL: 'sqlite:store.sqlite' },
      folder.path,
    );
    try {
      const logLines = () => service.lines();
      const url = `http://127.0.0.1:${service.port}`;
      // the readiness probes of startServiceProcess are logged too, at info
      await eventually(
        () => logLines().some((line) => line.msg.startsWith('plant store ')),
        (met) => met,
        5000,
      );
      // a new database's migrations are said first, a line each (test/upgrades.e2e-spec.ts)
      const started = logLines().filter(
        (line) =>
          line.msg !== 'request completed' && line.context !== 'Migrations',
      );
      const { version } = JSON.parse(
        readFileSync(join(ROOT, 'package.json'), 'utf8'),
      ) as { version: string };
      const database = `SQLite ${join(folder.path, 'store.sqlite')}`;
      expect(started).toEqual([
        expect.objectContaining({
          level: 30,
          msg: `plant store ${version} listening at ${url}, docs at ${url}/docs, on ${database}; rate limits in memory; trusting no proxy; no metrics (METRICS_PORT unset)`,
          url,
          docs: `${url}/docs`,
          database,
          rateLimits: 'in memory',
          trustProxy: 'trusting no proxy',
          metrics: 'no metrics (METRICS_PORT unset)',
          version,
        }),
      ]);
      // the README's Quick start quotes this line, for the default port and a folder of its own
      const quoted = /^\{"level":30,\.\.\.,"msg":"(.+)"\}$/m.exec(
        readFileSync(join(ROOT, 'README.md'), 'utf8'),
      )?.[1];
      expect(quoted).toBe(
        started[0].msg
          .replaceAll(url, 'http://localhost:3000')
          .replace(
            join(folder.path, 'store.sqlite'),
            '/home/me/plant-store/data/plant-store.sqlite',
          ),
      );

      // a quiet service's lines are not held in the buffer: LOG_FLUSH_INTERVAL_MS, with a
      // margin of 750 ms and of 20 requests at this machine's pace
      const pace = await paceOf(() => fetch(`${url}/health/live`));
      await fetch(`${url}/plants/1`, {
        headers: { 'X-Request-Id': 'flush-probe' },
      });
      const sent = Date.now();
      await eventually(
        () => logLines().some((line) => line.reqId === 'flush-probe'),
        (met) => met,
        5000,
      );
      expect(Date.now() - sent).toBeLessThan(1000 + 20 * pace);

      // and one line when it has stopped, with how long it was up
      service.child.kill('SIGTERM');
      expect(await service.exited).toBe(0);
      expect(logLines().at(-1)).toEqual(
        expect.objectContaining({
          level: 30,
          msg: expect.stringMatching(
            /^plant store stopped after \d+ s up: every request in flight finished$/,
          ),
          outcome: 'drained',
        }),
      );
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });

  it('on SIGTERM with SHUTDOWN_DELAY, answers readiness 503 at once and keeps accepting new connections for the delay, logging it once', async () => {
    const service = await startServiceProcess({
      DATABASE_URL: `sqlite:${join(folder.path, 'store.sqlite')}`,
      SHUTDOWN_DELAY: '1500ms',
      LOG_LEVEL: 'info',
    });
    const viaNewConnection = (path: string) =>
      new Promise<number>((resolve, reject) => {
        // agent: false, a connection of its own, as a balancer's new client opens
        const req = request(
          { host: '127.0.0.1', port: service.port, path, agent: false },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end();
      });
    expect(await viaNewConnection('/health/ready')).toBe(200);
    const signalled = performance.now();
    service.child.kill('SIGTERM');
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await viaNewConnection('/health/ready')).toBe(503);
    const during: number[] = [];
    while (performance.now() - signalled < 1200) {
      during.push(await viaNewConnection('/health/live'));
      during.push(await viaNewConnection('/openapi.json'));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // sampled at least once, however slow the machine: each answer is the promise
    expect(during.length).toBeGreaterThanOrEqual(2);
    expect(new Set(during)).toEqual(new Set([200]));
    expect(await service.exited).toBe(0);
    await expect(viaNewConnection('/health/live')).rejects.toThrow();

    const lines = service.lines();
    const warnings = lines.filter((line) => line.level === 40);
    expect(warnings.map((line) => line.msg)).toEqual([
      expect.stringMatching(
        /^shutting down: readiness answers 503; still serving for 1500 ms/,
      ),
      // the readiness 503 the test asked for, in the access log
      'request completed',
      expect.stringMatching(/^shutting down: no longer accepting connections/),
    ]);
    expect(lines.filter((line) => line.level >= 50)).toEqual([]);
  });

  it('on SIGTERM finishes in-flight requests, refuses new ones and exits 0', async () => {
    const databaseUrl = `sqlite:${join(folder.path, 'store.sqlite')}`;
    // the service creates its database; the CLI issues a token in it
    const service = await startServiceProcess({ DATABASE_URL: databaseUrl });
    const token = (
      await runCliProcess(['tokens', 'create', '--name', 'shutdown'], {
        DATABASE_URL: databaseUrl,
      })
    ).lastLine;
    const body = JSON.stringify({ id: 1, name: 'Last one in' });

    // headers and half the body are sent before SIGTERM; the rest after it
    const inFlight = new Promise<{ status: number; text: string }>(
      (resolve, reject) => {
        const req = request(
          {
            host: '127.0.0.1',
            port: service.port,
            method: 'POST',
            path: '/plants',
            headers: {
              'Content-Type': 'application/json',
              'Content-Length': Buffer.byteLength(body),
              Authorization: `Bearer ${token}`,
            },
          },
          (res) => {
            let text = '';
            res.on('data', (chunk: Buffer) => (text += chunk.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on('error', reject);
        req.write(body.slice(0, 10));
        req.on('socket', (socket) =>
          socket.on('connect', () =>
            setTimeout(() => {
              service.child.kill('SIGTERM');
              setTimeout(() => req.end(body.slice(10)), 300);
            }, 100),
          ),
        );
      },
    );

    const answer = await inFlight;
    expect(answer).toEqual({
      status: 200,
      text: '{"id":1,"name":"Last one in"}',
    });
    await expect(fetch(`${service.baseUrl}/health/live`)).rejects.toThrow();
    expect(await service.exited).toBe(0);
  });

  it('stops on SIGTERM, exiting 0, when whatever read its output has gone (a closed pipe)', async () => {
    const service = await startServiceProcess({
      LOG_LEVEL: 'info',
      DATABASE_URL: `sqlite:${join(folder.path, 'store.sqlite')}`,
    });
    // the reader hangs up: every write of the service's log now fails with EPIPE
    service.child.stdout!.destroy();
    service.child.kill('SIGTERM');
    // its grace is 10 s; a log that could not be written once held it for good
    let timer: NodeJS.Timeout | undefined;
    const stopped = await Promise.race([
      service.exited,
      new Promise((resolve) => {
        timer = setTimeout(() => resolve('still running'), testLimit(10_000));
      }),
    ]);
    clearTimeout(timer);
    expect(stopped).toBe(0);
  });

  it('logs structured JSON with a request id, and never a token', async () => {
    const databaseUrl = `sqlite:${join(folder.path, 'store.sqlite')}`;
    const service = await startServiceProcess({
      DATABASE_URL: databaseUrl,
      LOG_LEVEL: 'info',
    });
    const token = (
      await runCliProcess(['tokens', 'create', '--name', 'logged'], {
        DATABASE_URL: databaseUrl,
      })
    ).lastLine;
    try {
      const post = (authorization: string) =>
        fetch(`${service.baseUrl}/plants`, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            Authorization: authorization,
            'X-Request-Id': 'trace-42',
          },
          body: JSON.stringify({ id: 7, name: 'Logged' }),
        });
      const accepted = await post(`Bearer ${token}`);
      expect(accepted.status).toBe(200);
      expect(accepted.headers.get('x-request-id')).toBe('trace-42');
      const wrongToken = `pst_${'Z'.repeat(43)}`;
      expect((await post(`Bearer ${wrongToken}`)).status).toBe(401);
      service.child.kill('SIGTERM');
      await service.exited;

      const logLines = service.lines();
      expect(
        logLines.some(
          (line) => line.reqId === 'trace-42' && line.statusCode === 200,
        ),
      ).toBe(true);
      expect(service.output()).not.toContain(token.slice(4));
      expect(service.output()).not.toContain(wrongToken.slice(4));
    } finally {
      service.child.kill('SIGKILL');
    }
  });

  it('writes no longer an access-log line for a junk request than for a good one, however long its target', async () => {
    const service = await startServiceProcess({
      DATABASE_URL: `sqlite:${join(folder.path, 'junk.sqlite')}`,
      LOG_LEVEL: 'info',
    });
    try {
      const junk = [
        `/${'x'.repeat(8000)}`,
        // control characters, each six bytes once escaped in JSON
        `/plants/${'%01'.repeat(2000)}`,
        `/plants?${Array.from({ length: 700 }, (_, i) => `n${i}=1`).join('&')}`,
        `/plants/pst%5F${'A'.repeat(43)}`,
      ];
      for (const target of junk) {
        const response = await fetch(`${service.baseUrl}${target}`);
        expect(response.status).toBeGreaterThanOrEqual(400);
      }
      await fetch(`${service.baseUrl}/health/live`);
      service.child.kill('SIGTERM');
      await service.exited;
      const accessLines = service
        .output()
        .trim()
        .split('\n')
        .filter((line) => line.includes('"reqId"'));
      expect(accessLines.length).toBeGreaterThanOrEqual(junk.length);
      for (const line of accessLines) {
        // a path of 256 characters, each six bytes at worst once escaped, 16 names of 64
        expect(Buffer.byteLength(line)).toBeLessThan(4096);
      }
      expect(service.output()).not.toContain('A'.repeat(43));
    } finally {
      service.child.kill('SIGKILL');
    }
  });

  it('writes one warn line for a connection cut with many requests pipelined on it, not one per request', async () => {
    const service = await startServiceProcess({
      DATABASE_URL: `sqlite:${join(folder.path, 'pipelined.sqlite')}`,
      LOG_LEVEL: 'warn',
    });
    try {
      const { hostname, port } = new URL(service.baseUrl);
      for (const path of ['/health/live', '/plants/1']) {
        const socket = connect(Number(port), hostname);
        await once(socket, 'connect');
        socket.write(
          `GET ${path} HTTP/1.1\r\nHost: localhost\r\n\r\n`.repeat(2000),
        );
        // hung up as the first answer comes, the others still to be written
        await once(socket, 'data');
        socket.resetAndDestroy();
      }
      // a request of its own, so that every line of the two connections is written before it
      await fetch(`${service.baseUrl}/health/live`);
      service.child.kill('SIGTERM');
      await service.exited;
      const aborted = service.lines().filter((line) => line.aborted === true);
      expect(aborted.map((line) => [line.level, line.path])).toEqual([
        [40, '/health/live'],
        [40, '/plants/1'],
      ]);
    } finally {
      service.child.kill('SIGKILL');
    }
  });

  it('warns at boot, once, when TRUST_PROXY believes every peer', async () => {
    const service = await startServiceProcess({
      DATABASE_URL: `sqlite:${join(folder.path, 'trusting.sqlite')}`,
      LOG_LEVEL: 'info',
      TRUST_PROXY: 'true',
    });
    try {
      service.child.kill('SIGTERM');
      await service.exited;
      const warnings = service
        .lines()
        .filter(({ msg }) => msg.startsWith('TRUST_PROXY=true believes'));
      expect(warnings).toHaveLength(1);
      expect(warnings[0].level).toBe(40);
      expect(warnings[0].msg).toContain('Name the proxies instead');
    } finally {
      service.child.kill('SIGKILL');
    }
  });
});

describeWithRedis('the service process with Redis and named proxies', () => {
  it('names them in its start line', async () => {
    const folder = makeTempFolder();
    const redis = redisTestEnv();
    const url = new URL(redis.REDIS_URL);
    const service = await startServiceProcess({
      ...redis,
      DATABASE_URL: `sqlite:${join(folder.path, 'store.sqlite')}`,
      LOG_LEVEL: 'info',
      TRUST_PROXY: 'loopback, 10.0.0.0/8',
    });
    try {
      service.child.kill('SIGTERM');
      await service.exited;
      const start = service
        .lines()
        .find(({ msg }) => msg.includes(' listening at '));
      expect(start?.msg).toMatch(
        new RegExp(
          `; rate limits in Redis at ${url.toString().replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}; trusting the proxies at loopback, 10\\.0\\.0\\.0/8; no metrics`,
        ),
      );
    } finally {
      service.child.kill('SIGKILL');
      folder.remove();
    }
  });
});
