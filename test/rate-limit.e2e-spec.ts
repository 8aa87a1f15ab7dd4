import { TokensService } from '../src/auth/tokens.service';
import { startTestApp, type TestApp } from './helpers/test-app';

describe('rate limits', () => {
  let testApp: TestApp;

  beforeEach(async () => {
    testApp = await startTestApp({
      env: {
        RATE_LIMIT_PER_TOKEN: '20',
        RATE_LIMIT_PER_ADDRESS: '10',
        RATE_LIMIT_BAD_TOKENS: '3',
        RATE_LIMIT_WINDOW: '1m',
      },
    });
  });

  afterEach(() => testApp.close());

  const listWith = (token: string) =>
    testApp
      .http()
      .get('/plants?limit=1')
      .set('Authorization', `Bearer ${token}`);

  it('counts per token, with RateLimit headers, and answers 429 with Retry-After past the limit', async () => {
    const token = await testApp.issueToken();
    const first = await listWith(token).expect(200);
    expect(first.headers['ratelimit-limit']).toBe('20');
    expect(first.headers['ratelimit-remaining']).toBe('19');
    expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(0);
    for (let i = 1; i < 20; i += 1) await listWith(token).expect(200);

    const limited = await listWith(token);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({
      error: 429,
      message: expect.stringMatching(/^too many requests; retry after \d+ s$/),
    });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['ratelimit-remaining']).toBe('0');

    const other = await testApp.issueToken();
    await listWith(other).expect(200);
  });

  it('limits before it authenticates (app.module.ts wires the guards in that order): past its limit, a revoked token gets 429, not 401', async () => {
    const token = await testApp.issueToken();
    for (let i = 0; i < 20; i += 1) await listWith(token).expect(200);
    const tokens = testApp.app.get(TokensService);
    const [record] = await tokens.list();
    expect(await tokens.revoke(record.id)).toBe(true);
    await listWith(token).expect(429);
    const fresh = await testApp.issueToken();
    await listWith(fresh).expect(200);
  });

  it('counts requests without a token per client address', async () => {
    for (let i = 0; i < 10; i += 1)
      await testApp.http().get('/health/live').expect(200);
    const limited = await testApp.http().get('/health/live');
    expect(limited.status).toBe(429);
    expect(limited.headers['retry-after']).toBeDefined();
    const unauthenticated = await testApp.http().get('/plants');
    expect(unauthenticated.status).toBe(429);
  });

  it('blocks an address that keeps presenting bad tokens, even when it rotates them', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i += 1) {
      statuses.push((await listWith(`pst_${String(i).repeat(43)}`)).status);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    const limited = await listWith(`pst_${'9'.repeat(43)}`);
    expect(limited.body.message).toMatch(
      /^too many rejected tokens from this address; retry after \d+ s$/,
    );
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(800);

    const good = await testApp.issueToken();
    await listWith(good).expect(200);
  });
});
