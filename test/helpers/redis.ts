import { randomUUID } from 'node:crypto';
import { describeWhenReachable, probeService } from './external-service';

export const TEST_REDIS_URL =
  process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/5';

/**
 * Settings for an app that counts in the test Redis under a key prefix of its own, so that
 * no other test, suite or run on the machine shares or resets its counters.
 */
export function redisTestEnv(): Record<string, string> {
  return {
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: `plant-store-test:${randomUUID()}:`,
    // a loaded CI machine can take longer than the default to load the counting script, and a
    // command that times out is not counted (limits fail open)
    REDIS_TIMEOUT: '5s',
  };
}

/**
 * `describe` when Redis answers; otherwise skipped with the reason, except on CI, where a
 * skipped Redis suite is a failure. Nothing is emptied: every app gets its own key prefix.
 */
export function describeWithRedis(name: string, body: () => void): void {
  const problem = probeService(
    `const Redis = require('ioredis');
     const redis = new Redis(process.argv[1], { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000 });
     redis.connect().then(() => redis.ping()).then(
       () => { redis.disconnect(); process.exit(0); },
       (error) => { console.error(error.message); process.exit(1); });`,
    TEST_REDIS_URL,
  );
  describeWhenReachable(
    { name: 'Redis', url: TEST_REDIS_URL, variable: 'TEST_REDIS_URL', problem },
    name,
    body,
  );
}
