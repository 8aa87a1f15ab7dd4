import { spawnSync } from 'node:child_process';

export const TEST_REDIS_URL =
  process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/5';

function unreachableBecause(): string | undefined {
  const probe = spawnSync(
    process.execPath,
    [
      '-e',
      `const Redis = require('ioredis');
       const redis = new Redis(process.argv[1], { lazyConnect: true, maxRetriesPerRequest: 0, connectTimeout: 2000 });
       redis.connect().then(() => redis.flushdb()).then(
         () => { redis.disconnect(); process.exit(0); },
         (error) => { console.error(error.message); process.exit(1); });`,
      TEST_REDIS_URL,
    ],
    { encoding: 'utf8', timeout: 10_000 },
  );
  return probe.status === 0 ? undefined : probe.stderr.trim() || 'no answer';
}

/**
 * `describe` when Redis answers (its test database is emptied first); otherwise skipped with
 * the reason, except on CI, where a skipped Redis suite is a failure.
 */
export function describeWithRedis(name: string, body: () => void): void {
  const problem = unreachableBecause();
  if (problem === undefined) {
    describe(name, body);
    return;
  }
  const reason = `Redis at ${new URL(TEST_REDIS_URL).host} is not reachable (${problem})`;
  if (process.env.CI)
    throw new Error(`CI must run the Redis suite, but ${reason}`);
  console.warn(`Skipping "${name}": ${reason}; set TEST_REDIS_URL to run it`);
  describe.skip(name, body);
}
