import { createHash } from 'node:crypto';
import { TokensService } from '../src/platform/auth/tokens.service';
import { startTestApp, type TestApp } from './helpers/test-app';

const REALM_CHALLENGE = 'Bearer realm="plant-store"';
const INVALID_TOKEN_CHALLENGE =
  'Bearer realm="plant-store", error="invalid_token"';

describe('bearer authentication', () => {
  let testApp: TestApp;
  let nextId = 1;

  beforeAll(async () => {
    testApp = await startTestApp();
  });

  afterAll(async () => {
    await testApp.close();
  });

  const plantCount = async () =>
    (await testApp.query<{ n: bigint }>('SELECT count(*) AS n FROM plants'))[0]
      .n;

  function createPlant(authorization?: string) {
    const call = testApp.http().post('/plants');
    if (authorization !== undefined) call.set('Authorization', authorization);
    return call.send({ id: nextId++, name: 'Basil' });
  }

  async function expectUnauthorized(
    authorization: string | undefined,
    challenge: string,
    message: string,
  ) {
    const before = await plantCount();
    const response = await createPlant(authorization);
    expect(response.status).toBe(401);
    expect(response.headers['www-authenticate']).toBe(challenge);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    expect(response.body).toEqual({ error: 401, message });
    expect(await plantCount()).toBe(before);
  }

  it('answers 401 with a Bearer challenge when there is no Authorization header', () =>
    expectUnauthorized(
      undefined,
      REALM_CHALLENGE,
      'missing bearer token: send Authorization: Bearer <token>',
    ));

  it('checks the token before the body: no token and malformed JSON is still a 401', async () => {
    const response = await testApp
      .http()
      .post('/plants')
      .set('Content-Type', 'text/plain')
      .send('{"id": oops');
    expect(response.status).toBe(401);
    expect(response.body.error).toBe(401);
  });

  it.each(['Bearer', 'bearer', 'Bearer    '])(
    'answers 401 for the credentials %j, saying the token is empty (an unset shell variable)',
    (authorization) =>
      expectUnauthorized(
        authorization,
        REALM_CHALLENGE,
        'the bearer token is empty: send Authorization: Bearer <token> with the pst_ token that tokens create printed (a shell variable holding it may be unset)',
      ),
  );

  it.each(['Basic dXNlcjpwYXNz', 'Token abc', 'Bearer a b', 'Bearers x', ''])(
    'answers 401 for the credentials %j, which are not a bearer token',
    (authorization) =>
      expectUnauthorized(
        authorization,
        REALM_CHALLENGE,
        'the Authorization header must use the Bearer scheme: Authorization: Bearer <token>',
      ),
  );

  it.each([
    ['an unknown token of the right format', `pst_${'A'.repeat(43)}`],
    ['a token of another format', 'not-a-token'],
  ])('answers 401 invalid_token for %s', (_label, token) =>
    expectUnauthorized(
      `Bearer ${token}`,
      INVALID_TOKEN_CHALLENGE,
      'the bearer token is unknown, revoked or expired',
    ),
  );

  it('answers 401 invalid_token for a revoked token', async () => {
    const tokens = testApp.app.get(TokensService);
    const { token, record } = await tokens.issue({
      name: 'soon revoked',
      scopes: ['plants:write'],
    });
    await createPlant(`Bearer ${token}`).expect(200);
    expect(await tokens.revoke(record.id)).toBe(true);
    await expectUnauthorized(
      `Bearer ${token}`,
      INVALID_TOKEN_CHALLENGE,
      'the bearer token is unknown, revoked or expired',
    );
  });

  it('answers 401 invalid_token for an expired token', async () => {
    const token = await testApp.issueToken({
      expiresAt: new Date(Date.now() - 1000),
    });
    await expectUnauthorized(
      `Bearer ${token}`,
      INVALID_TOKEN_CHALLENGE,
      'the bearer token is unknown, revoked or expired',
    );
  });

  it('accepts a token that has not expired yet', async () => {
    const token = await testApp.issueToken({
      expiresAt: new Date(Date.now() + 60_000),
    });
    await createPlant(`Bearer ${token}`).expect(200);
  });

  it.each(['bearer', 'BEARER', 'BeArEr'])(
    'accepts the scheme written %s',
    async (scheme) => {
      const token = await testApp.issueToken();
      await createPlant(`${scheme} ${token}`).expect(200);
    },
  );

  it('answers 403 insufficient_scope to a token without plants:write', async () => {
    const token = await testApp.issueToken({ scopes: ['plants:read'] });
    const before = await plantCount();
    const response = await createPlant(`Bearer ${token}`);
    expect(response.status).toBe(403);
    expect(response.headers['www-authenticate']).toBe(
      'Bearer realm="plant-store", error="insufficient_scope", scope="plants:write"',
    );
    expect(response.body).toEqual({
      error: 403,
      message: 'the bearer token lacks the scope plants:write',
    });
    expect(await plantCount()).toBe(before);
  });

  it('stores only the SHA-256 hash of a token, never the token', async () => {
    const token = await testApp.issueToken();
    expect(token).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);
    const rows = await testApp.query('SELECT * FROM api_tokens');
    expect(
      JSON.stringify(rows, (_k, v: unknown) =>
        typeof v === 'bigint' ? String(v) : v,
      ),
    ).not.toContain(token.slice(4));
    const hash = createHash('sha256').update(token).digest('hex');
    expect(rows.map((row) => row.token_hash)).toContain(hash);
  });

  it('records when a token was last used', async () => {
    const tokens = testApp.app.get(TokensService);
    const { token, record } = await tokens.issue({
      name: 'tracked',
      scopes: ['plants:write'],
    });
    expect(record.lastUsedAt).toBeNull();
    const before = Date.now();
    await createPlant(`Bearer ${token}`).expect(200);
    const used = (await tokens.list()).find((t) => t.id === record.id);
    expect(used?.lastUsedAt?.getTime()).toBeGreaterThanOrEqual(
      Math.floor(before / 1000) * 1000,
    );
  });

  it('leaves health probes public', async () => {
    await testApp.http().get('/health/live').expect(200);
    await testApp.http().get('/health/ready').expect(200);
  });
});
