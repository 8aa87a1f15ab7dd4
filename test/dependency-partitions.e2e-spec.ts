import { captureLoggedLines, linesOf } from './helpers/logged-lines';
import { createTestDatabase, describeWithPostgres } from './helpers/postgres';
import { describeWithRedis, redisTestEnv } from './helpers/redis';
import { TcpRelay } from './helpers/tcp-relay';
import { startTestApp, type TestApp } from './helpers/test-app';
import { eventually } from './helpers/webhook-receiver';
import { paceOf, testLimit } from './helpers/pace';
import { MetricsServer } from '../src/platform/metrics/metrics-server';
import {
  SNAPSHOT_TTL_MS,
  SNAPSHOT_WAIT_MS,
} from '../src/modules/webhooks/webhook-metrics.service';

/**
 * A dependency that stops answering without refusing anything (a network partition) costs each
 * request a bounded wait, never a hang; liveness never waits on it. The partition is a TCP
 * relay that holds every byte until it is resumed.
 */

/** Every line the apps of this file log, at info level. */
const logged = captureLoggedLines();

/** The warn and error lines of `context`, and its lines saying it is back. */
const stateLines = (context: string) => linesOf(logged, context);

async function timed<T>(
  work: () => Promise<T>,
): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work();
  return { value, ms: performance.now() - started };
}

// A pause of the test's own event loop (a collection in a jest worker that has run many
// suites) is no outage (answerWithin in src/platform/rate-limit/answer-within.ts). A request that does
// not wait for Redis is told from one that does by this timeout, whatever the machine's pace:
// long enough that a busy machine's slow answer is not taken for a wait.
const REDIS_TIMEOUT_MS = 1000;

/** An app whose Redis is behind a relay of its own, which the test can pause. */
async function appBehindRedisRelay(
  env: Record<string, string> = {},
): Promise<{ relay: TcpRelay; app: TestApp }> {
  const redis = redisTestEnv();
  const relay = await TcpRelay.to(redis.REDIS_URL, 6379);
  const app = await startTestApp({
    env: {
      ...redis,
      REDIS_URL: relay.relayed(redis.REDIS_URL),
      REDIS_TIMEOUT: `${REDIS_TIMEOUT_MS}ms`,
      ...env,
    },
  });
  return { relay, app };
}

describeWithRedis('the service when Redis stops answering', () => {
  let relay: TcpRelay;
  let testApp: TestApp;

  beforeAll(async () => {
    ({ relay, app: testApp } = await appBehindRedisRelay({
      LOG_LEVEL: 'info',
    }));
  });

  afterAll(async () => {
    relay.resume();
    await testApp.close();
    await relay.close();
  });

  it('serves requests unlimited within the Redis timeout, liveness at once, and limits again once Redis answers', async () => {
    const limited = await testApp.http().get('/openapi.json').expect(200);
    expect(limited.headers['ratelimit-limit']).toBeDefined();

    relay.pause();
    for (let i = 0; i < 3; i += 1) {
      const { value: response, ms } = await timed(() =>
        testApp.http().get('/openapi.json'),
      );
      expect(response.status).toBe(200);
      expect(response.headers['ratelimit-limit']).toBeUndefined();
      // twice the timeout at most (a late timer gives one more), not the partition's length
      expect(ms).toBeLessThan(3 * REDIS_TIMEOUT_MS);
    }
    // after the first timeout Redis is not asked for a while: no request waits for it, with
    // a token (two counters) or a rejected one (three) alike
    const token = await testApp.issueToken();
    for (const authorization of [
      `Bearer ${token}`,
      `Bearer pst_${'Z'.repeat(43)}`,
      undefined,
    ]) {
      const request = testApp.http().get('/plants');
      if (authorization) request.set('Authorization', authorization);
      const { value: response, ms } = await timed(() => request);
      expect([authorization, response.headers['ratelimit-limit']]).toEqual([
        authorization,
        undefined,
      ]);
      expect(ms).toBeLessThan(REDIS_TIMEOUT_MS);
    }
    const { value: live, ms: liveMs } = await timed(() =>
      testApp.http().get('/health/live'),
    );
    expect(live.status).toBe(200);
    expect(liveMs).toBeLessThan(REDIS_TIMEOUT_MS);

    relay.resume();
    await eventually(
      async () =>
        (await testApp.http().get('/openapi.json')).headers['ratelimit-limit'],
      (limit) => limit !== undefined,
    );
    // one line when it went away, one when it came back, never a line per request
    expect(stateLines('Redis')).toEqual([
      {
        level: 40,
        msg: `Redis does not answer (no answer within ${REDIS_TIMEOUT_MS} ms): rate limits are not applied until it does`,
      },
      { level: 30, msg: 'Redis answers again: rate limits apply' },
    ]);
  });

  it('closes within the Redis timeout while Redis does not answer: a partition cannot hold a shutdown', async () => {
    const { relay: ownRelay, app } = await appBehindRedisRelay();
    try {
      const pace = await paceOf(() => app.http().get('/openapi.json'));
      ownRelay.pause();
      const { ms } = await timed(() => app.close());
      // QUIT's timeout (twice it when the timer fired late), and the rest of a close
      expect(ms).toBeLessThan(2 * REDIS_TIMEOUT_MS + 20 * pace);
    } finally {
      await app.close().catch(() => undefined);
      await ownRelay.close();
    }
  });
});

describeWithPostgres('the service when PostgreSQL is away', () => {
  it.each([
    [
      'stops answering (a partition)',
      (relay: TcpRelay) => Promise.resolve(relay.pause()),
    ],
    [
      'goes down (connections dropped and refused)',
      (relay: TcpRelay) => relay.cut(),
    ],
  ])(
    'when it %s: 503 within the query timeout, liveness at once, readiness 503, one line each way, and recovery by itself',
    async (_case, takeAway) => {
      logged.length = 0;
      const database = await createTestDatabase();
      const relay = await TcpRelay.to(database.url, 5432);
      const testApp = await startTestApp({
        env: {
          DATABASE_URL: relay.relayed(database.url),
          DB_POOL_SIZE: '2',
          DB_STATEMENT_TIMEOUT: '1s',
          DB_CONNECT_TIMEOUT: '1s',
          LOG_LEVEL: 'info',
        },
      });
      try {
        const token = await testApp.issueToken();
        const get = () =>
          testApp
            .http()
            .get('/plants?limit=1')
            .set('Authorization', `Bearer ${token}`);
        await get().expect(200);
        // each bound below has a margin of 20 requests at this machine's pace
        const pace = await paceOf(() => get());

        await takeAway(relay);
        // more requests than pooled connections: the rest wait for one, also bounded
        const { value: answers, ms } = await timed(() =>
          Promise.all(Array.from({ length: 5 }, () => get())),
        );
        for (const answer of answers) {
          expect(answer.status).toBe(503);
          expect(answer.body).toEqual({
            error: 503,
            message: 'the database is unavailable; try again later',
          });
        }
        // the query timeout (statement timeout + 1 s) and a connection wait, not the partition
        expect(ms).toBeLessThan(6_000 + 20 * pace);

        const { value: live, ms: liveMs } = await timed(() =>
          testApp.http().get('/health/live'),
        );
        expect(live.status).toBe(200);
        // no wait for the database (a connection timeout is 1 s)
        expect(liveMs).toBeLessThan(1000 + 20 * pace);
        const { value: ready, ms: readyMs } = await timed(() =>
          testApp.http().get('/health/ready'),
        );
        expect(ready.status).toBe(503);
        // within Kubernetes' default probe timeout (1 s): a 503, not a probe timed out
        expect(readyMs).toBeLessThan(1000 + 20 * pace);

        if (relay.isCut) await relay.restore();
        relay.resume();
        await eventually(
          async () => (await get()).status,
          (status) => status === 200,
        );
        await testApp.http().get('/health/ready').expect(200);
        // five 503s and a readiness 503: one line when it went away, one when it came back
        expect(stateLines('Database')).toEqual([
          {
            level: 40,
            msg: expect.stringMatching(
              /^Database does not answer \(.+\): requests that need it get 503/,
            ),
          },
          { level: 30, msg: 'Database answers again: serving again' },
        ]);
        expect(logged.filter((line) => line.level >= 50)).toEqual([]);
      } finally {
        relay.resume();
        await testApp.close().catch(() => undefined);
        await relay.close();
        await database.drop();
      }
    },
  );
});

describeWithPostgres('metrics while PostgreSQL stops answering', () => {
  it(
    'a scrape answers within the snapshot wait, saying the database is down, and how old its values are',
    async () => {
      const database = await createTestDatabase();
      const relay = await TcpRelay.to(database.url, 5432);
      const testApp = await startTestApp({
        env: {
          DATABASE_URL: relay.relayed(database.url),
          DB_STATEMENT_TIMEOUT: '30s',
          METRICS_PORT: '0',
        },
      });
      const metricsUrl = `http://127.0.0.1:${testApp.app.get(MetricsServer).port()}/metrics`;
      const scrape = async () => {
        const { value: response, ms } = await timed(() => fetch(metricsUrl));
        const text = await response.text();
        const value = (name: string) =>
          new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1];
        return {
          status: response.status,
          ms,
          up: value('plant_store_database_up'),
          age: value('plant_store_webhook_snapshot_age_seconds'),
        };
      };
      try {
        const pace = await paceOf(() => testApp.http().get('/health/live'));
        // never scraped, and the database hangs from the first read
        relay.pause();
        const first = await scrape();
        expect(first).toMatchObject({ status: 200, up: '0', age: '+Inf' });
        expect(first.ms).toBeLessThan(SNAPSHOT_WAIT_MS + 1000 + 20 * pace);
        relay.resume();
        await eventually(
          () => scrape(),
          ({ up }) => up === '1',
          15_000,
        );
        // a snapshot in hand that has aged past its time, and the database hanging again
        await new Promise((resolve) =>
          setTimeout(resolve, SNAPSHOT_TTL_MS + 100),
        );
        relay.pause();
        const later = await scrape();
        expect(later).toMatchObject({ status: 200, up: '0' });
        expect(Number(later.age)).toBeGreaterThan(SNAPSHOT_TTL_MS / 1000);
        expect(later.ms).toBeLessThan(SNAPSHOT_WAIT_MS + 1000 + 20 * pace);
      } finally {
        relay.resume();
        await testApp.close().catch(() => undefined);
        await relay.close();
        await database.drop();
      }
    },
    testLimit(60_000),
  );
});
