import { describeWhenReachable, probeService } from './external-service';

export const TEST_REDIS_URL =
  process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/5';

/**
 * `describe` when Redis answers (its test database is emptied first); otherwise skipped with
 * the reason, except on CI, where a skipped Redis suite is a failure.
 */
export function describeWithRedis(name: string, body: () => void): void {
  const problem = probeService(
    `const Redis = require('ioredis');
     const redis = new Redis(process.argv[1], { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000 });
     redis.connect().then(() => redis.flushdb()).then(
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
