import { connect } from 'node:net';
import { TokensService } from '../src/platform/auth/tokens.service';
import { MemoryCounters } from '../src/platform/rate-limit/memory-counters';
import { RateLimitCounters } from '../src/platform/rate-limit/rate-limit-counters';
import { portOf } from './helpers/raw-http';
import { startTestApp, type TestApp } from './helpers/test-app';

/**
 * Sends a request's head announcing a body, but not the body, and resolves with the status
 * line the service answers with; rejects when it waits for the body instead.
 */
function answerBeforeBody(port: number, head: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('no answer: the service waited for the body'));
    }, 3000);
    let received = '';
    socket.on('data', (chunk: Buffer) => {
      received += chunk.toString('latin1');
      if (received.includes('\r\n')) {
        clearTimeout(timer);
        socket.destroy();
        resolve(received.slice(0, received.indexOf('\r\n')));
      }
    });
    socket.on('error', reject);
    socket.write(head);
  });
}

describe('rate limits', () => {
  let testApp: TestApp;

  const LIMITS = {
    RATE_LIMIT_PER_TOKEN: '20',
    RATE_LIMIT_PER_ADDRESS: '10',
    RATE_LIMIT_BAD_TOKENS: '3',
    RATE_LIMIT_WINDOW: '1h',
  };

  beforeEach(async () => {
    testApp = await startTestApp({ env: LIMITS });
  });

  afterEach(() => testApp.close());

  const listWith = (token: string) =>
    testApp
      .http()
      .get('/plants?limit=1')
      .set('Authorization', `Bearer ${token}`);

  /** Requests without a token until the address's limit answers 429. */
  const spendAddressLimit = async () => {
    for (let i = 0; i <= 10; i += 1) {
      if ((await testApp.http().get('/openapi.json')).status === 429) return;
    }
    throw new Error('the address limit of 10 was never reached');
  };

  it('counts per token, with RateLimit headers, and answers 429 with Retry-After past the limit', async () => {
    const token = await testApp.issueToken();
    const first = await listWith(token).expect(200);
    expect(first.headers['ratelimit-limit']).toBe('20');
    expect(first.headers['ratelimit-remaining']).toBe('19');
    expect(Number(first.headers['ratelimit-reset'])).toBeGreaterThan(3500);
    for (let i = 1; i < 20; i += 1) await listWith(token).expect(200);

    const limited = await listWith(token);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({
      error: 429,
      message: expect.stringMatching(/^too many requests; retry after \d+ s$/),
    });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(3500);
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    // an API answer like any other: not cached, never framed (test/hardening.e2e-spec.ts)
    expect(limited.headers['cache-control']).toBe('no-store');
    expect(limited.headers['x-frame-options']).toBe('DENY');

    const other = await testApp.issueToken();
    await listWith(other).expect(200);
  });

  it('counts requests without a proven token per client address, on every route: public, unknown and the docs', async () => {
    await testApp.http().get('/openapi.yaml').expect(200);
    await testApp.http().get('/nowhere').expect(404);
    await testApp.http().get('/docs').expect(200);
    await testApp.http().get('/docs/swagger-ui.css').expect(200);
    await testApp.http().get('/plants').expect(401);
    const last = await testApp.http().get('/docs/README.md').expect(404);
    expect(last.headers['ratelimit-remaining']).toBe('4');
    for (let i = 0; i < 4; i += 1) await testApp.http().get('/nowhere');
    for (const path of [
      '/nowhere',
      '/docs',
      '/docs/swagger-ui-bundle.js',
      '/openapi.json',
      '/plants',
    ]) {
      const limited = await testApp.http().get(path);
      expect([path, limited.status]).toEqual([path, 429]);
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(3500);
    }
  });

  it('never limits the health probes, and does not count them', async () => {
    for (let i = 0; i < 30; i += 1) {
      await testApp.http().get('/health/live').expect(200);
    }
    await testApp.http().get('/health/ready').expect(200);
    const counted = await testApp.http().get('/openapi.json').expect(200);
    expect(counted.headers['ratelimit-remaining']).toBe('9');
    await spendAddressLimit();
    await testApp.http().get('/health/live').expect(200);
    await testApp.http().get('/health/ready').expect(200);
  });

  it('counts any other method on a probe path like any request', async () => {
    const posted = await testApp.http().post('/health/live').send('{}');
    expect(posted.headers['ratelimit-remaining']).toBe('9');
    await spendAddressLimit();
    await testApp.http().post('/health/live').expect(429);
    // the probes themselves still answer
    await testApp.http().get('/health/live').expect(200);
  });

  it('never lets an unproven token choose its counter: junk and revoked tokens are charged to the address', async () => {
    // guesses not blocked here, to show the counter they are charged to
    await testApp.close();
    testApp = await startTestApp({
      env: { ...LIMITS, RATE_LIMIT_BAD_TOKENS: '1000' },
    });
    const counters = testApp.app.get<MemoryCounters>(RateLimitCounters);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i += 1) {
      const response = await testApp
        .http()
        .get('/openapi.json')
        .set('Authorization', `Bearer x${i}`);
      statuses.push(response.status);
    }
    expect(statuses).toEqual([...Array<number>(10).fill(200), 429, 429]);
    // the address's requests and rejected tokens, and no counter per junk token
    expect(counters.keys().sort()).toEqual([
      'rejected-tokens:127.0.0.1',
      'requests:address:127.0.0.1',
    ]);

    const revoked = await testApp.issueToken();
    const tokens = testApp.app.get(TokensService);
    const [record] = await tokens.list();
    await tokens.revoke(record.id);
    await listWith(revoked).expect(429);
    const fresh = await testApp.issueToken();
    await listWith(fresh).expect(200);
  });

  it('blocks an address that keeps presenting bad tokens, even when it rotates them, before it looks at any token', async () => {
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

    // the block holds for a good token too (a client behind the same NAT waits it out), and
    // it is checked before the token store is asked
    const good = await testApp.issueToken();
    const authenticate = jest.spyOn(
      testApp.app.get(TokensService),
      'authenticate',
    );
    await listWith(good).expect(429);
    expect(authenticate).not.toHaveBeenCalled();
    // a request without a token is the address's ordinary business
    await testApp.http().get('/openapi.json').expect(200);
  });

  it('counts a rejected token on a public route as a guess too', async () => {
    for (let i = 0; i < 3; i += 1) {
      await testApp
        .http()
        .get('/openapi.json')
        .set('Authorization', `Bearer pst_${String(i).repeat(43)}`)
        .expect(200);
    }
    await testApp
      .http()
      .get('/openapi.json')
      .set('Authorization', `Bearer pst_${'7'.repeat(43)}`)
      .expect(429);
  });

  it('answers 404, 401 and 429 without reading the body, which it reads only for an operation that takes one', async () => {
    const port = await portOf(testApp.server);
    const head = (path: string, authorization = '') =>
      `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
      `${authorization}Content-Length: 16000\r\n\r\n`;
    await expect(answerBeforeBody(port, head('/nowhere'))).resolves.toBe(
      'HTTP/1.1 404 Not Found',
    );
    await expect(answerBeforeBody(port, head('/plants'))).resolves.toBe(
      'HTTP/1.1 401 Unauthorized',
    );
    const token = await testApp.issueToken({ scopes: ['plants:read'] });
    await expect(
      answerBeforeBody(
        port,
        head('/plants', `Authorization: Bearer ${token}\r\n`),
      ),
    ).resolves.toBe('HTTP/1.1 403 Forbidden');
    await spendAddressLimit();
    await expect(answerBeforeBody(port, head('/plants'))).resolves.toBe(
      'HTTP/1.1 429 Too Many Requests',
    );
    // the operation that takes the body does wait for it
    const writer = await testApp.issueToken();
    await expect(
      answerBeforeBody(
        port,
        head('/plants', `Authorization: Bearer ${writer}\r\n`),
      ),
    ).rejects.toThrow('waited for the body');
  });
});
