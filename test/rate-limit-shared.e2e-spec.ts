import { Logger } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import {
  describeWithRedis,
  redisTestEnv,
  TEST_REDIS_URL,
} from './helpers/redis';
import { MetricsServer } from '../src/platform/metrics/metrics-server';
import { RedisCounters } from '../src/platform/rate-limit/redis-counters';
import { freePort } from './helpers/ports';
import { startTestApp, type TestApp } from './helpers/test-app';

describeWithRedis('rate limits shared through Redis (REDIS_URL)', () => {
  let instances: TestApp[];
  let otherService: TestApp;

  beforeAll(async () => {
    // an hour's window: no window can end while the test runs, wherever it began
    const env = {
      ...redisTestEnv(),
      RATE_LIMIT_PER_ADDRESS: '6',
      RATE_LIMIT_WINDOW: '1h',
    };
    instances = [await startTestApp({ env }), await startTestApp({ env })];
    otherService = await startTestApp({ env: { ...env, ...redisTestEnv() } });
  });

  afterAll(async () => {
    await Promise.all(
      [...instances, otherService].map((instance) => instance.close()),
    );
  });

  it('counts one client across instances: 3 + 3 requests spend a limit of 6', async () => {
    const [a, b] = instances;
    for (let i = 0; i < 3; i += 1) {
      await a.http().get('/openapi.json').expect(200);
      await b.http().get('/nowhere').expect(404);
    }
    const limitedOnA = await a.http().get('/openapi.json');
    const limitedOnB = await b.http().get('/openapi.json');
    expect([limitedOnA.status, limitedOnB.status]).toEqual([429, 429]);
    expect(limitedOnB.body).toEqual({
      error: 429,
      message: expect.stringMatching(/^too many requests; retry after \d+ s$/),
    });
    expect(Number(limitedOnB.headers['retry-after'])).toBeGreaterThan(3500);
  });

  it('keeps the counters of another key prefix (another service or test run) apart', async () => {
    const response = await otherService.http().get('/openapi.json').expect(200);
    expect(response.headers['ratelimit-remaining']).toBe('5');
  });

  it('blocks a guessing address on every instance, for the block duration', async () => {
    // a pair of its own: the address has spent its request limit on the first pair
    const env = {
      ...redisTestEnv(),
      RATE_LIMIT_BAD_TOKENS: '2',
      RATE_LIMIT_WINDOW: '1h',
    };
    const [a, b] = [await startTestApp({ env }), await startTestApp({ env })];
    instances.push(a, b);
    const guess = (app: TestApp, digit: number) =>
      app
        .http()
        .get('/plants')
        .set('Authorization', `Bearer pst_${String(digit).repeat(43)}`);
    await guess(a, 1).expect(401);
    await guess(b, 2).expect(401);
    const blocked = await guess(a, 3).expect(429);
    expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(800);
    const token = await b.issueToken();
    const alsoBlocked = await b
      .http()
      .get('/plants')
      .set('Authorization', `Bearer ${token}`)
      .expect(429);
    expect(alsoBlocked.body.message).toMatch(
      /^too many rejected tokens from this address; retry after \d+ s$/,
    );
  });
});

describeWithRedis('a Redis password with the characters a URL reserves', () => {
  // a user of this run's own, whose password holds what ends a URL's userinfo early
  const username = `plant-store-test-${randomUUID()}`;
  const password = 'p/ss#w?rd@%:';
  let admin: Redis;

  beforeAll(async () => {
    admin = new Redis(TEST_REDIS_URL, { lazyConnect: true });
    await admin.connect();
    await admin.call(
      'ACL',
      'SETUSER',
      username,
      'on',
      `>${password}`,
      '~*',
      '+@all',
    );
  });

  afterAll(async () => {
    await admin.call('ACL', 'DELUSER', username);
    admin.disconnect();
  });

  it('counts in Redis when the password is percent-encoded', async () => {
    const url = new URL(TEST_REDIS_URL);
    url.username = username;
    url.password = encodeURIComponent(password);
    const app = await startTestApp({
      env: {
        ...redisTestEnv(),
        REDIS_URL: url.toString(),
        RATE_LIMIT_PER_ADDRESS: '5',
        RATE_LIMIT_WINDOW: '1h',
      },
    });
    try {
      await app.http().get('/openapi.json').expect(200);
      const second = await app.http().get('/openapi.json').expect(200);
      // counted, so Redis took the password: unlimited answers carry no RateLimit headers
      expect(second.headers['ratelimit-remaining']).toBe('3');
    } finally {
      await app.close();
    }
  });
});

describeWithRedis('Redis on a busy event loop', () => {
  /** The loop held, as by CPU pressure or a long collection. */
  const holdTheLoop = (ms: number) => {
    const until = Date.now() + ms;
    while (Date.now() < until);
  };

  /**
   * onModuleInit waits for the connection no longer than the timeout (100 ms here), which a
   * loaded machine can exceed; the held loop is what is under test, not the connection.
   */
  const untilAnswering = async (counters: RedisCounters) => {
    const deadline = Date.now() + 10_000;
    const counter = counters.counter({
      windowMs: 60_000,
      limit: 1,
      blockMs: 0,
    });
    for (;;) {
      try {
        await counter.blockedFor('connected');
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  };

  /** Counters under a key prefix of their own (or `keyPrefix`), once Redis answers them. */
  const answeringCounters = async (
    timeoutMs: number,
    keyPrefix = redisTestEnv().REDIS_KEY_PREFIX,
  ) => {
    const counters = new RedisCounters({
      url: TEST_REDIS_URL,
      keyPrefix,
      timeoutMs,
    });
    await counters.onModuleInit();
    await untilAnswering(counters);
    return counters;
  };
  const perMinute = (limit: number) => ({
    windowMs: 60_000,
    limit,
    blockMs: 0,
  });

  it('counts a hit whose answer waited unread while the loop was busy: no outage', async () => {
    const counters = await answeringCounters(100);
    try {
      const counter = counters.counter(perMinute(10));
      for (let hits = 1; hits <= 3; hits += 1) {
        const hit = counter.hit('busy');
        holdTheLoop(400);
        await expect(hit).resolves.toMatchObject({ hits });
      }
      expect(counters.answers).toBe(true);
    } finally {
      await counters.onModuleDestroy();
    }
  });

  it('takes a hit over the limit for an answer, not a failure: Redis is asked for the next one', async () => {
    const counters = await answeringCounters(1000);
    try {
      const counter = counters.counter(perMinute(1));
      await expect(counter.hit('over')).resolves.toMatchObject({
        hits: 1,
        blockedMs: 0,
      });
      for (const hits of [2, 3]) {
        const count = await counter.hit('over');
        expect(count.hits).toBe(hits);
        expect(count.blockedMs).toBeGreaterThan(50_000);
      }
      expect(counters.answers).toBe(true);
      await expect(counter.blockedFor('over')).resolves.toBeGreaterThan(50_000);
    } finally {
      await counters.onModuleDestroy();
    }
  });

  it("counts on in the previous release's keys, so that a rollout's two releases share one count", async () => {
    const keyPrefix = redisTestEnv().REDIS_KEY_PREFIX;
    const previousRelease = new Redis(TEST_REDIS_URL, { keyPrefix });
    const counters = await answeringCounters(1000, keyPrefix);
    try {
      // the previous release's script: INCR the key's hits, PEXPIRE its window on the first
      await previousRelease.incr('requests:address:192.0.2.1:hits');
      await previousRelease.pexpire('requests:address:192.0.2.1:hits', 60_000);
      const counter = counters.counter(perMinute(2));
      await expect(
        counter.hit('requests:address:192.0.2.1'),
      ).resolves.toMatchObject({ hits: 2, blockedMs: 0 });
      await expect(
        previousRelease.get('requests:address:192.0.2.1:hits'),
      ).resolves.toBe('2');
    } finally {
      previousRelease.disconnect();
      await counters.onModuleDestroy();
    }
  });

  it('closes with Redis up without logging an outage, though requests in flight still ask it', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const counters = await answeringCounters(1000);
    try {
      const counter = counters.counter(perMinute(10));
      // a hit sent as the close begins, and one after it: a request in the shutdown's grace
      const during = counter.hit('closing');
      const closed = counters.onModuleDestroy();
      const after = counter.hit('closing');
      await Promise.allSettled([during, after]);
      await closed;
      await expect(after).rejects.toThrow('closing its Redis connection');
      expect(
        warn.mock.calls.filter(([message]) =>
          String(message).startsWith('Redis'),
        ),
      ).toEqual([]);
    } finally {
      warn.mockRestore();
    }
  });

  it('says whether Redis answers in plant_store_redis_up', async () => {
    const port = await freePort();
    for (const [url, up] of [
      [TEST_REDIS_URL, 1],
      [`redis://127.0.0.1:${port}`, 0],
    ] as const) {
      const app = await startTestApp({
        env: {
          ...redisTestEnv(),
          REDIS_URL: url,
          REDIS_TIMEOUT: up ? '5s' : '200ms',
          METRICS_PORT: '0',
        },
      });
      try {
        await app.http().get('/openapi.json').expect(200);
        const metricsPort = app.app.get(MetricsServer).port();
        const text = await (
          await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
        ).text();
        expect(text).toContain(`\nplant_store_redis_up ${up}\n`);
      } finally {
        await app.close();
      }
    }
  });
});

describe('rate limits while Redis does not answer', () => {
  it('lets go of everything when closed, so that nothing keeps the process alive', async () => {
    const timers = () =>
      process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout')
        .length;
    const before = timers();
    const counters = new RedisCounters({
      url: `redis://127.0.0.1:${await freePort()}`,
      keyPrefix: redisTestEnv().REDIS_KEY_PREFIX,
      timeoutMs: 200,
    });
    await counters.onModuleInit();
    await expect(
      counters.counter({ windowMs: 60_000, limit: 10, blockMs: 0 }).hit('away'),
    ).rejects.toThrow();
    await counters.onModuleDestroy();
    // ioredis's disconnect timer outlived a socket that was never open (2 s by default)
    await new Promise((resolve) => setImmediate(resolve));
    expect(timers()).toBeLessThanOrEqual(before);
  });

  it('serves requests unlimited rather than refuse them', async () => {
    const port = await freePort();
    const app = await startTestApp({
      env: {
        REDIS_URL: `redis://127.0.0.1:${port}`,
        REDIS_TIMEOUT: '200ms',
        RATE_LIMIT_PER_ADDRESS: '1',
      },
    });
    try {
      for (let i = 0; i < 3; i += 1) {
        const response = await app.http().get('/openapi.json').expect(200);
        expect(response.headers['ratelimit-limit']).toBeUndefined();
      }
    } finally {
      await app.close();
    }
  });
});
