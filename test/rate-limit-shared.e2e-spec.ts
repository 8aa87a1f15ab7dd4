import { describeWithRedis, TEST_REDIS_URL } from './helpers/redis';
import { startTestApp, type TestApp } from './helpers/test-app';

describeWithRedis('rate limits shared through Redis (REDIS_URL)', () => {
  let instances: TestApp[];

  beforeAll(async () => {
    const env = {
      REDIS_URL: TEST_REDIS_URL,
      RATE_LIMIT_PER_ADDRESS: '6',
      RATE_LIMIT_WINDOW: '1m',
    };
    instances = [await startTestApp({ env }), await startTestApp({ env })];
  });

  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.close()));
  });

  it('counts one client across instances: 3 + 3 requests spend a limit of 6', async () => {
    const [a, b] = instances;
    for (let i = 0; i < 3; i += 1) {
      await a.http().get('/health/live').expect(200);
      await b.http().get('/health/live').expect(200);
    }
    const limitedOnA = await a.http().get('/health/live');
    const limitedOnB = await b.http().get('/health/live');
    expect([limitedOnA.status, limitedOnB.status]).toEqual([429, 429]);
    expect(limitedOnB.body).toEqual({
      error: 429,
      message: expect.stringMatching(/^too many requests; retry after \d+ s$/),
    });
  });
});
