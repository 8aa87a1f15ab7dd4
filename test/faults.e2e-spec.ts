import { WRITE_OUTCOME_UNKNOWN_MESSAGE } from '../src/platform/common/errors/error-answers';
import { writeFileSync } from 'node:fs';
import Database from 'better-sqlite3';
import { request } from 'node:http';
import { join } from 'node:path';
import { runCliProcess, startServiceProcess } from './helpers/service-process';
import { DataSource } from 'typeorm';
import { JobScheduler } from '../src/platform/jobs/job-scheduler';
import { captureLoggedLines, linesOf } from './helpers/logged-lines';
import { makeTempFolder, startTestApp } from './helpers/test-app';
import { eventually } from './helpers/webhook-receiver';
import { paceOf } from './helpers/pace';

/** Every line the in-process apps of this file log, at info level. */
const logged = captureLoggedLines();

/** The Database's state lines logged since `from` (an index into `logged`). */
const databaseLinesSince = (from: number) =>
  linesOf(logged.slice(from), 'Database');

/**
 * Reads that succeed while writes are refused: readiness and the webhook dispatcher's poll
 * (every 100 ms here) find the database answering. Between them, a failed write.
 */
async function writesBetweenReads(
  testApp: Awaited<ReturnType<typeof startTestApp>>,
  write: () => Promise<{ status: number }>,
): Promise<void> {
  for (let round = 0; round < 3; round += 1) {
    expect((await write()).status).toBe(503);
    // past the 1 s for which readiness reuses its answer, and several polls
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await testApp.http().get('/health/ready').expect(200);
  }
}

/** An app that logs its state changes, with the dispatcher polling every 100 ms. */
const LOGGING_APP = {
  env: { LOG_LEVEL: 'info', WEBHOOKS_POLL_INTERVAL: '100ms' },
};

describe('faults of the service process', () => {
  let folder: ReturnType<typeof makeTempFolder>;
  let env: Record<string, string>;
  let token: string;

  beforeEach(async () => {
    folder = makeTempFolder();
    env = { DATABASE_URL: `sqlite:${join(folder.path, 'store.sqlite')}` };
    // the database the service will use, empty: the CLI migrates it but never creates one
    writeFileSync(join(folder.path, 'store.sqlite'), '');
    token = (await runCliProcess(['tokens', 'create', '--name', 'faults'], env))
      .lastLine;
  });

  afterEach(() => folder.remove());

  it('keeps every acknowledged create through SIGKILL mid-flight, in a database that passes integrity_check', async () => {
    const service = await startServiceProcess(env);
    const acknowledged = new Map<string, string>();
    let nextId = 1n;
    let killed = false;
    const writer = async (lane: number) => {
      while (!killed) {
        const id =
          (nextId++ * 9_007_199_254_740_993n) % 9_223_372_036_854_775_807n;
        const name = `lane ${lane} plant ${id}`;
        try {
          const response = await fetch(`${service.baseUrl}/plants`, {
            method: 'POST',
            headers: {
              'Content-Type': 'application/json',
              Authorization: `Bearer ${token}`,
            },
            body: `{"id":${id},"name":${JSON.stringify(name)}}`,
          });
          if (response.status === 200) acknowledged.set(String(id), name);
          else expect(response.status).toBe(200);
        } catch {
          return; // the connection died with the process
        }
      }
    };
    const lanes = Array.from({ length: 8 }, (_, lane) => writer(lane));
    // killed once 50 creates are acknowledged, whatever the machine's pace, with eight in flight
    await eventually(
      () => acknowledged.size,
      (size) => size >= 50,
      50_000,
    );
    service.child.kill('SIGKILL');
    killed = true;
    await Promise.all(lanes);
    expect(await service.exited).toBe('SIGKILL');

    const db = new Database(join(folder.path, 'store.sqlite'));
    try {
      db.defaultSafeIntegers(true);
      expect(db.pragma('integrity_check')).toEqual([{ integrity_check: 'ok' }]);
      const stored = new Map(
        (
          db.prepare('SELECT id, name FROM plants').all() as {
            id: bigint;
            name: string;
          }[]
        ).map((row) => [String(row.id), row.name]),
      );
      const missing = [...acknowledged].filter(
        ([id, name]) => stored.get(id) !== name,
      );
      expect(missing).toEqual([]);
    } finally {
      db.close();
    }
  });

  it('cuts a request still running after SHUTDOWN_GRACE_PERIOD, and exits 1 to say so', async () => {
    const service = await startServiceProcess({
      ...env,
      SHUTDOWN_GRACE_PERIOD: '500ms',
    });
    // headers and part of a body that never completes
    const cut = new Promise<string>((resolve) => {
      const req = request({
        host: '127.0.0.1',
        port: service.port,
        method: 'POST',
        path: '/plants',
        headers: {
          'Content-Type': 'application/json',
          'Content-Length': 100,
          Authorization: `Bearer ${token}`,
        },
      });
      req.on('response', (response) =>
        resolve(`answered ${response.statusCode}`),
      );
      req.on('error', (error: NodeJS.ErrnoException) =>
        resolve(error.code ?? error.message),
      );
      req.write('{"id":1,');
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const pace = await paceOf(() =>
      fetch(`${service.baseUrl}/health/live`).then((answer) => answer.text()),
    );
    const signalled = Date.now();
    service.child.kill('SIGTERM');
    expect(await service.exited).toBe(1);
    // it waited for the request (its drain), and not for ever: a margin of 20 requests at this
    // machine's pace
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(450);
    expect(Date.now() - signalled).toBeLessThan(5000 + 20 * pace);
    expect(await cut).toBe('ECONNRESET');
  });
});

describe('a full database', () => {
  it('answers creates with 503, writes nothing, keeps serving reads, and recovers when space returns', async () => {
    const testApp = await startTestApp(LOGGING_APP);
    // the periodic jobs stopped: a job's lease update fits in the full file's pages, and a
    // write taken in the middle of the outage would end it early (a rehearsal saw two)
    await testApp.app.get(JobScheduler).beforeApplicationShutdown();
    const from = logged.length;
    try {
      const token = await testApp.issueToken();
      const post = (id: number) =>
        testApp
          .http()
          .post('/plants')
          .set('Authorization', `Bearer ${token}`)
          .send({ id, name: `plant ${id}`.repeat(50) });
      await post(1).expect(200);
      const dataSource = testApp.app.get(DataSource);
      // SQLite's own ceiling on the file's size: the same SQLITE_FULL a full disk gives
      const [{ page_count: pages }] =
        await dataSource.query<{ page_count: bigint }[]>('PRAGMA page_count');
      await dataSource.query(`PRAGMA max_page_count = ${pages}`);

      let full: { status: number; body: unknown } | undefined;
      for (let id = 2; id < 500 && full === undefined; id += 1) {
        const response = await post(id);
        if (response.status !== 200)
          full = { status: response.status, body: response.body };
      }
      expect(full).toEqual({
        status: 503,
        body: {
          error: 503,
          message: WRITE_OUTCOME_UNKNOWN_MESSAGE,
        },
      });
      const db = testApp.openDatabase();
      const stored = (
        db.prepare('SELECT count(*) AS n FROM plants').get() as { n: bigint }
      ).n;
      expect(db.pragma('integrity_check')).toEqual([{ integrity_check: 'ok' }]);
      db.close();
      await testApp
        .http()
        .get('/plants/1')
        .set('Authorization', `Bearer ${token}`)
        .expect(200);
      await testApp
        .http()
        .get('/plants?limit=1000')
        .set('Authorization', `Bearer ${token}`)
        .expect(200);

      await writesBetweenReads(testApp, () => post(11_000));

      await dataSource.query('PRAGMA max_page_count = 1073741823');
      await post(10_000).expect(200);
      // one line when writes were first refused, one when they were taken again: reads in
      // between do not end the outage, and each refused write does not start another
      expect(databaseLinesSince(from)).toEqual([
        {
          level: 40,
          msg: 'Database refuses writes (SqliteError: database or disk is full): writes get 503 until it takes them again; reads are served',
        },
        {
          level: 30,
          msg: 'Database takes writes again: serving writes again',
        },
      ]);
      const after = testApp.openDatabase();
      expect(
        (
          after.prepare('SELECT count(*) AS n FROM plants').get() as {
            n: bigint;
          }
        ).n,
      ).toBe(stored + 1n);
      after.close();
    } finally {
      await testApp.close();
    }
  });
});

describe('a read-only database', () => {
  it('answers creates and deletes with 503, keeps serving reads, and recovers when it is writable again', async () => {
    const testApp = await startTestApp(LOGGING_APP);
    const from = logged.length;
    try {
      const token = await testApp.issueToken();
      const auth = { Authorization: `Bearer ${token}` };
      await testApp
        .http()
        .post('/plants')
        .set(auth)
        .send({ id: 1, name: 'Before' })
        .expect(200);
      const dataSource = testApp.app.get(DataSource);
      // the same SQLITE_READONLY a file mounted or made read-only gives (root, as CI runs, ignores file modes)
      await dataSource.query('PRAGMA query_only = ON');

      const create = await testApp
        .http()
        .post('/plants')
        .set(auth)
        .send({ id: 2, name: 'During' });
      expect(create.status).toBe(503);
      expect(create.body).toEqual({
        error: 503,
        message: WRITE_OUTCOME_UNKNOWN_MESSAGE,
      });
      await testApp.http().delete('/plants/1').set(auth).expect(503);
      await testApp.http().get('/plants/1').set(auth).expect(200);
      await testApp.http().get('/plants').set(auth).expect(200);
      await writesBetweenReads(testApp, () =>
        testApp.http().delete('/plants/1').set(auth),
      );

      await dataSource.query('PRAGMA query_only = OFF');
      await testApp
        .http()
        .post('/plants')
        .set(auth)
        .send({ id: 2, name: 'After' })
        .expect(200);
      expect(databaseLinesSince(from)).toEqual([
        {
          level: 40,
          msg: expect.stringMatching(
            /^Database refuses writes \(.+\): writes get 503 until it takes them again; reads are served$/,
          ),
        },
        {
          level: 30,
          msg: 'Database takes writes again: serving writes again',
        },
      ]);
      const db = testApp.openDatabase();
      expect(
        db.prepare('SELECT id, name FROM plants ORDER BY id').all(),
      ).toEqual([
        { id: 1n, name: 'Before' },
        { id: 2n, name: 'After' },
      ]);
      db.close();
    } finally {
      await testApp.close();
    }
  });
});
