import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import type { PortableDataSource } from '../src/platform/database/portable-data-source';
import { describeWhenAvailable } from './helpers/external-service';
import { testLimit } from './helpers/pace';
import {
  mountSmallFilesystem,
  type SmallFilesystem,
} from './helpers/small-filesystem';
import {
  runCliProcess,
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';
import { freePort } from './helpers/ports';
import { startTestApp, type TestApp } from './helpers/test-app';
import { eventually } from './helpers/webhook-receiver';

/** Why a small filesystem cannot be mounted here, if it cannot: one is mounted and removed. */
function smallFilesystemProblem(): string | undefined {
  const probe = mountSmallFilesystem('4m');
  if (typeof probe === 'string') return probe;
  probe.remove();
  return undefined;
}

const smallFilesystem = smallFilesystemProblem();
const describeOnSmallFilesystem = (name: string, body: () => void) =>
  describeWhenAvailable(smallFilesystem, 'run the tests as root', name, body);

// A disk that fills under SQLite (docs/decisions.md, "Durability"; docs/security-and-reliability.md,
// "A full or read-only database"), on a real filesystem of 4 MiB.
describeOnSmallFilesystem('a full disk under SQLite', () => {
  let disk: SmallFilesystem;
  let testApp: TestApp;
  let token: string;

  beforeAll(async () => {
    disk = mountSmallFilesystem('4m') as SmallFilesystem;
    testApp = await startTestApp({
      databaseFile: join(disk.path, 'store.sqlite'),
    });
    token = await testApp.issueToken();
  });

  afterAll(async () => {
    await testApp?.close();
    disk?.remove();
  });

  const create = (id: number, name = 'Fern') =>
    testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .timeout(testLimit(15_000))
      .send({ id, name });

  it('refuses a create whose commit meets the full disk, and answers everything after it', async () => {
    await create(1).expect(200);
    // every byte taken: the next commit's write to the WAL fails, and SQLite rolls its
    // transaction back by itself, so the ROLLBACK after it finds none
    disk.fill();
    const refused = await create(2, 'x'.repeat(15_000));
    expect(refused.body).toMatchObject({ error: 503 });
    const read = await testApp
      .http()
      .get('/plants/1')
      .set('Authorization', `Bearer ${token}`)
      .timeout(testLimit(15_000));
    expect(read.status).toBe(200);
    disk.empty();
    await create(3).expect(200);
  });
});

// SQLite rolls a transaction back by itself after some errors (SQLITE_FULL, SQLITE_IOERR,
// SQLITE_NOMEM): its COMMIT then fails, and so does the ROLLBACK after it. The transaction
// held SQLite's one connection (ConnectionGate), and held it for ever: every request after it
// waited without end, readiness said the database was unreachable, and SIGTERM could not end
// the process (a full disk on a loaded machine, issue 60).
describe('a transaction SQLite rolled back by itself', () => {
  let testApp: TestApp;
  let dataSource: PortableDataSource;

  beforeAll(async () => {
    testApp = await startTestApp();
    dataSource = testApp.app.get(DataSource);
  });

  afterAll(() => testApp.close());

  /** What SQLite does on its own after such an error: the transaction is gone. */
  const rollBackBehindItsBack = () =>
    (
      dataSource.driver as unknown as {
        databaseConnection: { exec(sql: string): void };
      }
    ).databaseConnection.exec('ROLLBACK');

  const answered = (work: Promise<unknown>) =>
    Promise.race([
      work.then(() => 'answered'),
      new Promise((resolve) => setTimeout(() => resolve('no answer'), 2000)),
    ]);

  it.each([
    ['its work fails', true],
    ['its COMMIT fails', false],
  ])('frees the connection when %s', async (_, throws) => {
    const failed = dataSource.transaction(async (manager) => {
      await manager.query("INSERT INTO plants (id, name) VALUES (900, 'gone')");
      rollBackBehindItsBack();
      if (throws) throw new Error('the statement met a full disk');
    });
    await expect(failed).rejects.toThrow();
    expect(await answered(dataSource.query('SELECT 1'))).toBe('answered');
    expect(
      await answered(
        dataSource.transaction((manager) => manager.query('SELECT 1')),
      ),
    ).toBe('answered');
    expect(await testApp.query('SELECT id FROM plants WHERE id = 900')).toEqual(
      [],
    );
  });
});

/** The busy bound (DB_BUSY_TIMEOUT) and the grace the process below is given. */
const BUSY_MS = 10_000;
const GRACE_MS = 3000;

interface Answer {
  kind: 'create' | 'read' | 'ready';
  phase: 'before' | 'full' | 'after';
  sentAt: number;
  ms: number;
  /** undefined: no answer within the bound */
  status?: number;
  message?: string;
}

// The steps that once hung the service for good (issue 60, item 5): one subscription to a
// receiver that is down, 40 creates and 5 reads a second and readiness every 200 ms, the
// disk filled to 400 KB free, on a machine kept busy by six spinning processes.
describeOnSmallFilesystem(
  'a full disk under SQLite, a real process on a loaded machine',
  () => {
    let disk: SmallFilesystem;
    let databaseUrl: string;
    let service: ServiceProcess;
    const spinners: ChildProcess[] = [];

    beforeAll(async () => {
      disk = mountSmallFilesystem('4m') as SmallFilesystem;
      databaseUrl = `sqlite:${join(disk.path, 'store.sqlite')}`;
      const env = {
        DATABASE_URL: databaseUrl,
        // the database's outage lines are warn and info
        LOG_LEVEL: 'info',
        WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
        SHUTDOWN_GRACE_PERIOD: `${GRACE_MS}ms`,
        DB_BUSY_TIMEOUT: `${BUSY_MS}ms`,
        RATE_LIMIT_PER_TOKEN: '1000000000',
        RATE_LIMIT_PER_ADDRESS: '1000000000',
      };
      service = await startServiceProcess(env);
      for (let spinner = 0; spinner < 6; spinner += 1) {
        spinners.push(
          spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }),
        );
      }
    });

    afterAll(async () => {
      for (const spinner of spinners) spinner.kill('SIGKILL');
      service?.child.kill('SIGKILL');
      await service?.exited;
      disk?.remove();
    });

    it('answers every request within its bound: 503 for the writes it cannot take, reads served, writes taken again once space returns, and SIGTERM ends it within its grace', async () => {
      const created = await runCliProcess(
        [
          'tokens',
          'create',
          '--name',
          'load',
          '--scopes',
          'plants:read,plants:write,webhooks:manage',
        ],
        { DATABASE_URL: databaseUrl },
      );
      expect(created.status).toBe(0);
      const headers = {
        Authorization: `Bearer ${created.lastLine}`,
        'Content-Type': 'application/json',
      };
      const down = await freePort();
      const subscribed = await fetch(
        `${service.baseUrl}/webhooks/subscriptions`,
        {
          method: 'POST',
          headers,
          body: JSON.stringify({ url: `http://127.0.0.1:${down}/hook` }),
        },
      );
      expect(subscribed.status).toBe(201);
      await fetch(`${service.baseUrl}/plants`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ id: 1, name: 'the one read' }),
      }).then((answer) => expect(answer.status).toBe(200));

      const answers: Answer[] = [];
      const pending: Promise<void>[] = [];
      let phase: Answer['phase'] = 'before';
      // past the busy bound and a margin for the busy machine, a request counts as unanswered
      const answeredWithinMs = BUSY_MS + 10_000;
      const send = (
        kind: Answer['kind'],
        path: string,
        init: RequestInit = {},
      ) => {
        const answer: Answer = { kind, phase, sentAt: Date.now(), ms: 0 };
        answers.push(answer);
        pending.push(
          fetch(`${service.baseUrl}${path}`, {
            ...init,
            headers,
            signal: AbortSignal.timeout(answeredWithinMs),
          })
            .then(async (response) => {
              answer.status = response.status;
              const text = await response.text();
              if (response.status !== 200 && text.startsWith('{')) {
                answer.message = (
                  JSON.parse(text) as { message?: string }
                ).message;
              }
            })
            .catch(() => undefined)
            .finally(() => (answer.ms = Date.now() - answer.sentAt)),
        );
      };
      let id = 2;
      const timers = [
        setInterval(() => {
          id += 1;
          send('create', '/plants', {
            method: 'POST',
            body: JSON.stringify({ id, name: `plant ${id} `.repeat(40) }),
          });
        }, 25),
        setInterval(() => send('read', '/plants/1'), 200),
        setInterval(() => send('ready', '/health/ready'), 200),
      ];
      const wait = (ms: number) =>
        new Promise((resolve) => setTimeout(resolve, ms));
      try {
        await wait(2000);
        phase = 'full';
        disk.fill(400 * 1024);
        await wait(8000);
        phase = 'after';
        disk.empty();
        await wait(6000);
      } finally {
        timers.forEach(clearInterval);
      }
      await Promise.all(pending);

      const unanswered = answers.filter(({ status }) => status === undefined);
      expect(unanswered.slice(0, 5)).toEqual([]);
      // 503 for a write the database refuses, never a 500 or another 5xx
      expect(
        answers
          .filter(({ status }) => status! >= 500 && status !== 503)
          .slice(0, 5),
      ).toEqual([]);
      const refused = answers.filter(
        ({ kind, status }) => kind === 'create' && status === 503,
      );
      expect(refused.length).toBeGreaterThan(0);
      // each refusal within the busy bound, and a margin for the six spinning processes
      expect(Math.max(...refused.map(({ ms }) => ms))).toBeLessThanOrEqual(
        BUSY_MS + 5000,
      );
      // reads are served throughout
      const reads = answers.filter(({ kind }) => kind === 'read');
      expect(reads.filter(({ status }) => status !== 200).slice(0, 5)).toEqual(
        [],
      );
      // writes are taken again within seconds of the space coming back
      const emptiedAt = Math.min(
        ...answers
          .filter(({ phase: at }) => at === 'after')
          .map(({ sentAt }) => sentAt),
      );
      const taken = answers.filter(
        ({ kind, phase: at, status }) =>
          kind === 'create' && at === 'after' && status === 200,
      );
      expect(taken.length).toBeGreaterThan(0);
      expect(
        Math.min(...taken.map(({ sentAt }) => sentAt)) - emptiedAt,
      ).toBeLessThanOrEqual(3000);
      const lastReady = answers.filter(({ kind }) => kind === 'ready').at(-1)!;
      expect(lastReady.status).toBe(200);
      // the log is written every 250 ms (LOG_FLUSH_INTERVAL_MS): the last ready may come first
      const said = await eventually(
        () => service.lines().map(({ msg }) => msg),
        (msgs) =>
          msgs.includes('Database takes writes again: serving writes again'),
        testLimit(5_000),
      );
      expect(said).toEqual(
        expect.arrayContaining([
          expect.stringMatching(/^Database refuses writes/),
          'Database takes writes again: serving writes again',
        ]),
      );

      // SIGTERM ends it within its grace, the bounded close after it included
      const stoppedAt = Date.now();
      service.child.kill('SIGTERM');
      await service.exited;
      expect(Date.now() - stoppedAt).toBeLessThanOrEqual(
        GRACE_MS + 2000 + 3000,
      );
    });
  },
);
