import { WRITE_OUTCOME_UNKNOWN_MESSAGE } from '../src/platform/common/errors/error-answers';
import { PortableDataSource } from '../src/platform/database/portable-data-source';
import { READINESS_REUSE_MS } from '../src/platform/health/health.controller';
import { DataSource } from 'typeorm';
import { PlantsService } from '../src/modules/plants/plants.service';
import { makeTempFolder, startTestApp, type TestApp } from './helpers/test-app';
import { join } from 'node:path';

describe('the application', () => {
  let testApp: TestApp;
  let token: string;

  beforeAll(async () => {
    testApp = await startTestApp();
    token = await testApp.issueToken();
  });

  afterAll(() => testApp.close());

  afterEach(() => jest.restoreAllMocks());

  it.each([
    ['GET', '/nowhere'],
    ['POST', '/plants/extra/segments'],
    ['PUT', '/plants'],
    ['GET', '/plants/1/..%2f..%2fetc%2fpasswd'],
  ])(
    'answers an unknown route %s %s with a 404 Error',
    async (method, path) => {
      const response = await testApp
        .http()
        [method.toLowerCase() as 'get' | 'post' | 'put'](path)
        .set('Authorization', `Bearer ${token}`);
      expect(response.status).toBe(404);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(Object.keys(response.body as object).sort()).toEqual([
        'error',
        'message',
      ]);
      expect(response.body.error).toBe(404);
      expect(typeof response.body.message).toBe('string');
    },
  );

  it('never sends X-Powered-By', async () => {
    const responses = await Promise.all([
      testApp.http().get('/health/live'),
      testApp.http().get('/nowhere'),
      testApp.http().post('/plants').send({}),
      testApp
        .http()
        .post('/plants')
        .set('Authorization', `Bearer ${token}`)
        .send({ id: 1, name: 'x' }),
    ]);
    for (const response of responses) {
      expect(response.headers['x-powered-by']).toBeUndefined();
    }
  });

  it('answers a crash with a generic 500 Error that leaks nothing', async () => {
    jest
      .spyOn(PlantsService.prototype, 'create')
      .mockRejectedValue(
        new Error(
          'SQLITE_MISUSE: SELECT secret FROM api_tokens at /srv/app/db.sqlite',
        ),
      );
    const response = await testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .send({ id: 2, name: 'Crash' });
    expect(response.status).toBe(500);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.text).toBe(
      '{"error":500,"message":"internal server error"}',
    );
  });

  it('answers a non-Error throw with the same generic 500', async () => {
    jest.spyOn(PlantsService.prototype, 'create').mockImplementation(() => {
      throw 'a string thrown from deep inside'; // eslint-disable-line @typescript-eslint/only-throw-error
    });
    const response = await testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .send({ id: 3, name: 'Crash' });
    expect(response.status).toBe(500);
    expect(response.text).toBe(
      '{"error":500,"message":"internal server error"}',
    );
  });

  it('reports liveness publicly', async () => {
    const response = await testApp.http().get('/health/live');
    expect(response.status).toBe(200);
    expect(response.body).toEqual({ status: 'ok' });
  });

  it('pings the database once a reuse window for many readiness probes at once', async () => {
    const original = PortableDataSource.prototype.ping;
    const pingedAt: number[] = [];
    const ping = jest
      .spyOn(PortableDataSource.prototype, 'ping')
      .mockImplementation(function (this: PortableDataSource, timeoutMs) {
        pingedAt.push(Date.now());
        return original.call(this, timeoutMs);
      });
    try {
      // past the reuse window of any earlier probe
      await new Promise((resolve) => setTimeout(resolve, READINESS_REUSE_MS));
      const answers = await Promise.all(
        Array.from({ length: 20 }, () => testApp.http().get('/health/ready')),
      );
      expect(answers.map(({ status }) => status)).toEqual(Array(20).fill(200));
      // the probes arrive over however long a busy machine takes to send them: one ping (on
      // a quiet machine), and never a second within the window of the one before
      expect(pingedAt.length).toBeGreaterThanOrEqual(1);
      expect(pingedAt.length).toBeLessThan(answers.length);
      pingedAt
        .slice(1)
        .forEach((at, index) =>
          expect(at - pingedAt[index]).toBeGreaterThanOrEqual(
            READINESS_REUSE_MS - 50,
          ),
        );
    } finally {
      ping.mockRestore();
    }
  });

  it('reports readiness publicly with a database ping', async () => {
    const response = await testApp.http().get('/health/ready');
    expect(response.status).toBe(200);
    expect(response.body).toMatchObject({
      status: 'ok',
      info: { database: { status: 'up' } },
    });
  });
});

describe('the SQLite connection', () => {
  it.each([
    [{}, 1n],
    [{ DB_SYNCHRONOUS: 'full' }, 2n],
  ])(
    'runs in WAL mode with the synchronous level DB_SYNCHRONOUS asks (%j)',
    async (env, level) => {
      const folder = makeTempFolder();
      const testApp = await startTestApp({
        env,
        databaseFile: join(folder.path, 'wal.sqlite'),
      });
      try {
        const dataSource = testApp.app.get(DataSource);
        expect(await dataSource.query('PRAGMA journal_mode')).toEqual([
          { journal_mode: 'wal' },
        ]);
        expect(await dataSource.query('PRAGMA synchronous')).toEqual([
          { synchronous: level },
        ]);
      } finally {
        await testApp.close();
        folder.remove();
      }
    },
  );
});

describe('the application without its database', () => {
  it('answers 503 Errors for readiness and creates once the database is gone', async () => {
    const testApp = await startTestApp();
    try {
      const token = await testApp.issueToken();
      await testApp.app.get(DataSource).destroy();
      const ready = await testApp.http().get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body).toEqual({
        error: 503,
        message: 'the database is unreachable',
      });
      const create = await testApp
        .http()
        .post('/plants')
        .set('Authorization', `Bearer ${token}`)
        .send({ id: 1, name: 'Orphan' });
      expect(create.status).toBe(503);
      expect(create.body).toEqual({
        error: 503,
        message: WRITE_OUTCOME_UNKNOWN_MESSAGE,
      });
    } finally {
      await testApp.close().catch(() => undefined);
    }
  });
});

describe('a restart', () => {
  it('keeps plants and tokens in the SQLite file', async () => {
    const folder = makeTempFolder();
    const databaseFile = join(folder.path, 'nested', 'store.sqlite');
    try {
      const first = await startTestApp({ databaseFile });
      const token = await first.issueToken();
      await first
        .http()
        .post('/plants')
        .set('Authorization', `Bearer ${token}`)
        .send({ id: 9007199254740993n.toString(), name: 'placeholder' })
        .expect(400);
      await first
        .http()
        .post('/plants')
        .set('Content-Type', 'application/json')
        .set('Authorization', `Bearer ${token}`)
        .send('{"id":9007199254740993,"name":"Survivor","tag":"hardy"}')
        .expect(200);
      await first.close();

      const second = await startTestApp({ databaseFile });
      try {
        const again = await second
          .http()
          .post('/plants')
          .set('Content-Type', 'application/json')
          .set('Authorization', `Bearer ${token}`)
          .send('{"id":9007199254740993,"name":"Impostor"}');
        expect(again.body).toEqual({
          error: 400,
          message: 'a plant with id 9007199254740993 already exists',
        });
        const db = second.openDatabase();
        expect(db.prepare('SELECT id, name, tag FROM plants').all()).toEqual([
          { id: 9007199254740993n, name: 'Survivor', tag: 'hardy' },
        ]);
        db.close();
      } finally {
        await second.close();
      }
    } finally {
      folder.remove();
    }
  });
});
