import { testLimit } from './helpers/pace';
import { createHmac, createPublicKey } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  IdentityProvider,
  type TokenOptions,
} from './helpers/identity-provider';
import { captureLoggedLines } from './helpers/logged-lines';
import { startServiceProcess } from './helpers/service-process';
import { makeTempFolder, startTestApp, type TestApp } from './helpers/test-app';
import { eventually } from './helpers/webhook-receiver';

const INVALID_TOKEN_CHALLENGE =
  'Bearer realm="plant-store", error="invalid_token"';
const REFUSED =
  'the bearer token is not a valid access token of the identity provider: ';

/** GET /plants with `token`: the read every token kind is tried on here. */
const listPlantsWith = (testApp: TestApp, token: string) =>
  testApp.http().get('/plants').set('Authorization', `Bearer ${token}`);

const base64url = (value: unknown) =>
  Buffer.from(JSON.stringify(value)).toString('base64url');

describe('access tokens of an identity provider (OIDC_ISSUER)', () => {
  let provider: IdentityProvider;
  let testApp: TestApp;
  let nextId = 1;
  const logged = captureLoggedLines();

  beforeAll(async () => {
    provider = await IdentityProvider.start();
    testApp = await startTestApp({
      env: provider.env({ LOG_LEVEL: 'info' }),
    });
  });

  afterAll(async () => {
    await testApp.close();
    await provider.close();
  });

  const createPlant = (token: string) =>
    testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .send({ id: nextId++, name: 'Basil' });

  const listPlants = (token: string) => listPlantsWith(testApp, token);

  const plantCount = async () =>
    Number(
      (
        await testApp.query<{ n: bigint }>('SELECT count(*) AS n FROM plants')
      )[0].n,
    );

  async function expectRefused(token: string, reason: string) {
    const before = await plantCount();
    const response = await createPlant(token);
    expect(response.status).toBe(401);
    expect(response.headers['www-authenticate']).toBe(INVALID_TOKEN_CHALLENGE);
    expect(response.body).toEqual({ error: 401, message: REFUSED + reason });
    expect(await plantCount()).toBe(before);
  }

  describe('a valid token', () => {
    it.each([
      ['a scope string', { scope: 'plants:read plants:write' }],
      ['an scp string', { scp: 'plants:read plants:write' }],
      ['an scp array', { scp: ['plants:read', 'plants:write'] }],
      [
        'unknown scopes beside, ignored',
        { scope: 'openid profile plants:write email plants:read' },
      ],
    ])('is accepted with %s', async (_, claims) => {
      const token = await provider.token('alice', undefined, { claims });
      expect((await createPlant(token)).status).toBe(200);
      expect((await listPlants(token)).status).toBe(200);
    });

    it.each(['at+jwt', 'application/at+jwt', 'JWT'])(
      'is accepted with typ %s',
      async (typ) => {
        const token = await provider.token('alice', 'plants:write', {
          header: { typ },
        });
        expect((await createPlant(token)).status).toBe(200);
      },
    );

    it('gets 403 insufficient_scope for a scope it lacks, as a token of ours does', async () => {
      const token = await provider.token('alice', 'plants:read');
      const response = await createPlant(token);
      expect(response.status).toBe(403);
      expect(response.headers['www-authenticate']).toBe(
        'Bearer realm="plant-store", error="insufficient_scope", scope="plants:write"',
      );
      expect(response.body).toEqual({
        error: 403,
        message: 'the bearer token lacks the scope plants:write',
      });
    });

    it('holds no scope at all without a scope claim', async () => {
      const token = await provider.token('alice', undefined);
      expect((await listPlants(token)).status).toBe(403);
    });

    it('owns its Idempotency-Keys: the same key from another subject is another key', async () => {
      const body = { id: nextId++, name: 'Fern' };
      const post = async (sub: string) =>
        testApp
          .http()
          .post('/plants')
          .set(
            'Authorization',
            `Bearer ${await provider.token(sub, 'plants:write')}`,
          )
          .set('Idempotency-Key', 'shared-key')
          .send(body);
      const first = await post('alice');
      expect(first.status).toBe(200);
      const repeat = await post('alice');
      expect(repeat.text).toBe(first.text);
      expect(repeat.headers['idempotent-replayed']).toBe('true');
      const other = await post('bob');
      expect(other.status).toBe(400);
      expect(other.headers['idempotent-replayed']).toBeUndefined();
    });

    it('takes the scopes of webhooks too', async () => {
      const token = await provider.token('operator', 'webhooks:manage');
      const response = await testApp
        .http()
        .get('/webhooks/subscriptions')
        .set('Authorization', `Bearer ${token}`);
      expect(response.status).toBe(200);
    });
  });

  describe('a token that fails a check gets 401 invalid_token, and changes nothing', () => {
    const now = () => Math.floor(Date.now() / 1000);
    /** A payload that would pass every check, for tokens made by hand. */
    const forgedPayload = (sub: string, scope: string) =>
      base64url({
        iss: provider.issuer,
        aud: provider.audience,
        sub,
        exp: now() + 300,
        scope,
      });

    it.each<[string, TokenOptions, string]>([
      [
        'expired (past the 30 s tolerance)',
        { claims: { iat: now() - 600, exp: now() - 60 } },
        'it has expired',
      ],
      [
        'not valid yet',
        { claims: { nbf: now() + 120 } },
        'it is not valid yet (nbf)',
      ],
      [
        'from another issuer',
        { claims: { iss: 'http://127.0.0.1:1/realms/other' } },
        'its iss is not ISSUER',
      ],
      [
        'for another audience',
        { claims: { aud: ['account', 'billing'] } },
        'its aud does not name plant-store',
      ],
      [
        'with no exp',
        { claims: { exp: undefined } },
        'its exp claim is missing',
      ],
      [
        'with no sub',
        { claims: { sub: undefined } },
        'its sub claim is missing',
      ],
      [
        'with an empty sub',
        { claims: { sub: '' } },
        'its sub claim is not a non-empty string',
      ],
      [
        'with a numeric sub (the caller of the string of its digits is someone else)',
        { claims: { sub: 42 } },
        'its sub claim is not a non-empty string',
      ],
      [
        'issued in the future (iat past the 30 s tolerance)',
        { claims: { iat: now() + 120 } },
        'it was issued in the future (iat)',
      ],
      [
        "living past the ten years of the service's own tokens (exp: 1e300)",
        { claims: { exp: 1e300 } },
        'it expires more than 3650d (ten years) from now (exp)',
      ],
      [
        'expiring ten years and a day from now',
        { claims: { exp: now() + 3651 * 86_400 } },
        'it expires more than 3650d (ten years) from now (exp)',
      ],
      [
        'with a malformed scope beside a valid scp',
        { claims: { scope: ['plants:write'], scp: 'plants:write' } },
        'its scope claim is not a space-separated string',
      ],
      [
        'with a malformed scp',
        { claims: { scope: undefined, scp: 42 } },
        'its scp claim is not a space-separated string or an array of strings',
      ],
      [
        'typed as nothing',
        { header: { typ: undefined } },
        'its typ is undefined, not at+jwt or JWT',
      ],
      [
        'typed as an ID token',
        { header: { typ: 'id+jwt' } },
        'its typ is "id+jwt", not at+jwt or JWT',
      ],
    ])('%s', async (_, options, reason) =>
      expectRefused(
        await provider.token('alice', 'plants:write', options),
        reason.replace('ISSUER', provider.issuer),
      ),
    );

    it('tampered with: its payload changed after signing', async () => {
      const token = await provider.token('alice', 'plants:read');
      const [header, , signature] = token.split('.');
      const payload = forgedPayload('alice', 'plants:read plants:write');
      await expectRefused(
        `${header}.${payload}.${signature}`,
        'its signature does not verify',
      );
    });

    it('alg none, unsigned', async () => {
      const header = base64url({ alg: 'none', typ: 'at+jwt' });
      const payload = forgedPayload('mallory', 'plants:write');
      await expectRefused(
        `${header}.${payload}.`,
        'its alg is not one of RS256, ES256, PS256, EdDSA (OIDC_ALGORITHMS)',
      );
    });

    it('HS256, signed with the public key as the secret (algorithm confusion)', async () => {
      const publicPem = createPublicKey({
        key: provider.publicJwk(),
        format: 'jwk',
      })
        .export({ type: 'spki', format: 'pem' })
        .toString();
      const header = base64url({ alg: 'HS256', kid: 'key-1', typ: 'at+jwt' });
      const payload = forgedPayload('mallory', 'plants:write');
      const signature = createHmac('sha256', publicPem)
        .update(`${header}.${payload}`)
        .digest('base64url');
      await expectRefused(
        `${header}.${payload}.${signature}`,
        'its alg is not one of RS256, ES256, PS256, EdDSA (OIDC_ALGORITHMS)',
      );
    });

    it('not a JWT at all', async () => {
      await expectRefused('eyJhbGciOi.garbage', 'it is not a JWT');
      await expectRefused('x'.repeat(2000), 'it is not a JWT');
    });
  });

  describe("the service's own tokens, beside", () => {
    it('still work, and are never taken for JWTs', async () => {
      const token = await testApp.issueToken();
      expect((await createPlant(token)).status).toBe(200);
      // a pst_ token that is unknown is refused as one of ours, never parsed
      const unknown = await createPlant(`pst_${'A'.repeat(43)}`);
      expect(unknown.status).toBe(401);
      expect(unknown.body.message).toBe(
        'the bearer token is unknown, revoked or expired',
      );
      const jwtAfterPrefix = await createPlant(
        `pst_${await provider.token('alice', 'plants:write')}`,
      );
      expect(jwtAfterPrefix.body.message).toBe(
        'the bearer token is unknown, revoked or expired',
      );
    });
  });

  describe('the access log', () => {
    it('names the subject, never the token', async () => {
      const token = await provider.token('carol', 'plants:read');
      await listPlants(token).expect(200);
      const line = logged.find(
        (entry) =>
          entry.msg === 'request completed' &&
          (entry as { caller?: string }).caller ===
            `jwt:carol@${provider.issuer}`,
      );
      expect(line).toBeDefined();
      expect(JSON.stringify(logged)).not.toContain(token.split('.')[2]);
    });
  });

  describe("the issuer's keys", () => {
    it('are fetched again for an unknown kid, and a dropped key stops working', async () => {
      const old = await provider.token('alice', 'plants:read');
      expect((await listPlants(old)).status).toBe(200);
      await provider.addKey('key-2', 'ES256');
      provider.published = ['key-1', 'key-2'];
      await sleep(150); // OIDC_JWKS_COOLDOWN, 100 ms here
      const rotated = await provider.token('alice', 'plants:read', {
        kid: 'key-2',
      });
      expect((await listPlants(rotated)).status).toBe(200);
      expect((await listPlants(old)).status).toBe(200);
      // the issuer drops key-1; the next fetch (for another unknown kid) learns it
      provider.published = ['key-2'];
      await provider.addKey('key-3');
      await sleep(150);
      const unpublished = await provider.token('alice', 'plants:read', {
        kid: 'key-3',
      });
      const refused = await listPlants(unpublished);
      expect(refused.status).toBe(401);
      expect(refused.body.message).toBe(
        `${REFUSED}no key of the identity provider's matches its kid`,
      );
      const dropped = await listPlants(old);
      expect(dropped.status).toBe(401);
      expect((await listPlants(rotated)).status).toBe(200);
    });

    it('are fetched at most once per cooldown, however many tokens name unknown kids', async () => {
      await sleep(150);
      const before = provider.keySetFetches;
      const forged = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          provider.token('mallory', 'plants:read', {
            header: { kid: `made-up-${i}` },
          }),
        ),
      );
      const started = Date.now();
      const answers = await Promise.all(forged.map(listPlants));
      const took = Date.now() - started;
      expect(answers.map(({ status }) => status)).toEqual(Array(20).fill(401));
      // the tokens that arrive while a fetch runs share it; those after it wait for the next
      // the cooldown allows (100 ms here): one fetch, and one more per cooldown they span
      const fetches = provider.keySetFetches - before;
      expect(fetches).toBeGreaterThanOrEqual(1);
      expect(fetches).toBeLessThanOrEqual(1 + Math.floor(took / 100));
    });
  });
});

describe('an identity provider that fails', () => {
  let provider: IdentityProvider;

  beforeAll(async () => {
    provider = await IdentityProvider.start();
  });

  afterAll(async () => {
    await provider.close();
  });

  it('naming a jwks_uri over plain http on another host: never fetched, readiness names it, its tokens get 401', async () => {
    // .invalid never resolves (RFC 2606): nothing could be sent there, were it tried
    provider.discoveredJwksUrl = 'http://keys.plant-store.invalid/jwks';
    const fetches = provider.keySetFetches;
    const testApp = await startTestApp({ env: provider.env() });
    try {
      const message = `the identity provider's keys are out of reach (its discovery document's jwks_uri http://keys.plant-store.invalid/jwks is not https (http is taken on loopback only))`;
      const ready = await eventually(
        async () =>
          (await testApp.http().get('/health/ready')).body as {
            message?: string;
          },
        (body) => body.message === message,
        5000,
      );
      expect(ready).toEqual({ error: 503, message });
      const token = await provider.token('alice', 'plants:read');
      const refused = await listPlantsWith(testApp, token);
      expect([refused.status, refused.body.message]).toEqual([
        401,
        REFUSED + message,
      ]);
      expect(provider.keySetFetches).toBe(fetches);
    } finally {
      provider.discoveredJwksUrl = undefined;
      await testApp.close();
    }
  });

  it('down at boot: the service starts, readiness names it, its tokens get 401 until it is back', async () => {
    provider.mode = 'down';
    const testApp = await startTestApp({ env: provider.env() });
    try {
      const ready = await testApp.http().get('/health/ready');
      expect(ready.status).toBe(503);
      expect(ready.body.message).toMatch(
        /^the identity provider's keys are out of reach \(http:\/\/127\.0\.0\.1:\d+\/realms\/plants\/\.well-known\/openid-configuration: fetch failed: /,
      );
      const token = await provider.token('alice', 'plants:read');
      const refused = await listPlantsWith(testApp, token);
      expect(refused.status).toBe(401);
      expect(refused.body.message).toMatch(
        /^the bearer token is not a valid access token of the identity provider: the identity provider's keys are out of reach/,
      );
      provider.mode = 'ok';
      await sleep(150);
      expect((await testApp.http().get('/health/ready')).body).toEqual({
        status: 'ok',
        info: {
          database: { status: 'up' },
          identityProvider: { status: 'up' },
        },
      });
      await listPlantsWith(testApp, token).expect(200);
    } finally {
      await testApp.close();
    }
  });

  it('down later: the keys in hand keep working, a new kid gets 401, never a 5xx', async () => {
    provider.mode = 'ok';
    const testApp = await startTestApp({ env: provider.env() });
    try {
      const token = await provider.token('alice', 'plants:read');
      const list = () => listPlantsWith(testApp, token);
      await list().expect(200);
      for (const mode of [
        'down',
        'error',
        'huge',
        'not-json',
        'no-keys',
      ] as const) {
        provider.mode = mode;
        await sleep(150);
        await provider.addKey(`new-${mode}`);
        const unknown = await provider.token('alice', 'plants:read', {
          kid: `new-${mode}`,
        });
        const refused = await listPlantsWith(testApp, unknown);
        expect({ mode, status: refused.status }).toEqual({ mode, status: 401 });
        expect(refused.body.message).toContain(
          "the identity provider's keys are out of reach",
        );
        await list().expect(200);
      }
      expect((await testApp.http().get('/health/ready')).status).toBe(200);
    } finally {
      await testApp.close();
    }
  });

  it(
    'slow: a fetch that never finishes ends at its timeout with 401',
    async () => {
      provider.mode = 'slow';
      const testApp = await startTestApp({ env: provider.env() });
      try {
        const token = await provider.token('alice', 'plants:read');
        const refused = await listPlantsWith(testApp, token);
        expect(refused.status).toBe(401);
        expect(refused.body.message).toContain(
          "the identity provider's keys are out of reach",
        );
      } finally {
        await testApp.close();
      }
    },
    testLimit(20_000),
  );
});

describe('an identity provider with a scope claim of its own (OIDC_SCOPE_CLAIM)', () => {
  it('reads the scopes from it, and from nowhere else', async () => {
    const provider = await IdentityProvider.start();
    const testApp = await startTestApp({
      env: provider.env({ OIDC_SCOPE_CLAIM: 'permissions' }),
    });
    try {
      const list = async (claims: Record<string, unknown>) =>
        (
          await testApp
            .http()
            .get('/plants')
            .set(
              'Authorization',
              `Bearer ${await provider.token('alice', undefined, { claims })}`,
            )
        ).status;
      expect(await list({ permissions: ['plants:read'] })).toBe(200);
      expect(await list({ permissions: 'plants:read' })).toBe(200);
      expect(await list({ scope: 'plants:read' })).toBe(403);
    } finally {
      await testApp.close();
      await provider.close();
    }
  });
});

describe('an access token without a kid', () => {
  it('is taken when one key of the issuer fits it, and refused when several do', async () => {
    const provider = await IdentityProvider.start();
    const testApp = await startTestApp({ env: provider.env() });
    try {
      const kidless = await provider.token('alice', 'plants:read', {
        header: { kid: undefined },
      });
      expect((await listPlantsWith(testApp, kidless)).status).toBe(200);
      await provider.addKey('key-1b');
      provider.published = ['key-1', 'key-1b'];
      await sleep(150); // OIDC_JWKS_COOLDOWN, 100 ms here
      // a token of the new key makes the service fetch the keys again
      const newKey = await provider.token('alice', 'plants:read', {
        kid: 'key-1b',
      });
      expect((await listPlantsWith(testApp, newKey)).status).toBe(200);
      const refused = await listPlantsWith(testApp, kidless);
      expect(refused.status).toBe(401);
      expect(refused.body.message).toBe(
        `${REFUSED}it names no kid, and more than one key of the identity provider fits it`,
      );
    } finally {
      await testApp.close();
      await provider.close();
    }
  });
});

describe('rate limits of access tokens', () => {
  it('count per subject: two tokens of one subject share a limit, another subject has its own', async () => {
    const provider = await IdentityProvider.start();
    const testApp = await startTestApp({
      env: provider.env({
        RATE_LIMIT_PER_TOKEN: '3',
        RATE_LIMIT_WINDOW: '1h',
      }),
    });
    try {
      const status = async (sub: string) =>
        (
          await testApp
            .http()
            .get('/plants')
            .set(
              'Authorization',
              `Bearer ${await provider.token(sub, 'plants:read', { claims: { jti: `${Math.random()}` } })}`,
            )
        ).status;
      const alice = [];
      for (let i = 0; i < 4; i += 1) alice.push(await status('alice'));
      expect(alice).toEqual([200, 200, 200, 429]);
      expect(await status('bob')).toBe(200);
    } finally {
      await testApp.close();
      await provider.close();
    }
  });
});

describe('the built service (node dist/main.js) with an identity provider', () => {
  it('names the issuer in its start line and takes its tokens over HTTP', async () => {
    const provider = await IdentityProvider.start();
    const folder = makeTempFolder();
    const service = await startServiceProcess(
      provider.env({
        LOG_LEVEL: 'info',
        DATABASE_URL: `sqlite:${join(folder.path, 'store.sqlite')}`,
      }),
    );
    try {
      await eventually(
        () =>
          service.lines().find((line) => line.msg.startsWith('plant store ')),
        (line) => line !== undefined,
        5000,
      );
      const started = service
        .lines()
        .find((line) => line.msg.startsWith('plant store '))!;
      expect(started.msg).toMatch(
        new RegExp(
          `; access tokens of ${provider.issuer.replace(/[.]/g, '\\.')} too$`,
        ),
      );
      expect(started).toMatchObject({ identityProvider: provider.issuer });
      const token = await provider.token('alice', 'plants:read');
      const answer = await fetch(`${service.baseUrl}/plants`, {
        headers: { Authorization: `Bearer ${token}` },
      });
      expect(answer.status).toBe(200);
      expect((await fetch(`${service.baseUrl}/health/ready`)).status).toBe(200);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
      folder.remove();
      await provider.close();
    }
  });
});

describe('a signing-key rotation within the cooldown', () => {
  let provider: IdentityProvider;

  beforeEach(async () => {
    provider = await IdentityProvider.start();
  });

  afterEach(async () => {
    await provider.close();
  });

  /** Waits until the service has the provider's keys, fetched in the background at boot. */
  const keysFetched = (testApp: TestApp) =>
    eventually(
      async () => (await testApp.http().get('/health/ready')).status,
      (status) => status === 200,
      5000,
    );

  it('refuses no token of the new key, and counts none as a guess: they wait for the next fetch, and share it', async () => {
    const testApp = await startTestApp({
      env: provider.env({
        OIDC_JWKS_COOLDOWN: '2s',
        RATE_LIMIT_BAD_TOKENS: '5',
      }),
    });
    try {
      await keysFetched(testApp);
      const fetches = provider.keySetFetches;
      // the provider publishes a key and signs with it at once, as Keycloak does
      await provider.addKey('key-2');
      provider.published = ['key-1', 'key-2'];
      const rotated = await provider.token('alice', 'plants:read', {
        kid: 'key-2',
      });
      const answers = await Promise.all(
        Array.from({ length: 25 }, () => listPlantsWith(testApp, rotated)),
      );
      expect(answers.map(({ status }) => status)).toEqual(Array(25).fill(200));
      expect(provider.keySetFetches - fetches).toBe(1);
      // the address was never taken for a guesser's
      const own = await testApp.issueToken({ scopes: ['plants:read'] });
      expect((await listPlantsWith(testApp, own)).status).toBe(200);
    } finally {
      await testApp.close();
    }
  });

  it('with a cooldown longer than the wait, refuses saying when to try again, never as a guess', async () => {
    const testApp = await startTestApp({
      env: provider.env({
        OIDC_JWKS_COOLDOWN: '1h',
        RATE_LIMIT_BAD_TOKENS: '5',
      }),
    });
    try {
      await keysFetched(testApp);
      await provider.addKey('key-2');
      provider.published = ['key-1', 'key-2'];
      const rotated = await provider.token('alice', 'plants:read', {
        kid: 'key-2',
      });
      for (let i = 0; i < 10; i += 1) {
        const refused = await listPlantsWith(testApp, rotated);
        expect(refused.status).toBe(401);
        expect(refused.body.message).toMatch(
          new RegExp(
            `^${REFUSED}no key of the identity provider's fetched \\d+ s ago matches its kid, and they are fetched again in 36\\d\\d s \\(OIDC_JWKS_COOLDOWN\\): try again then$`,
          ),
        );
      }
      const own = await testApp.issueToken({ scopes: ['plants:read'] });
      expect((await listPlantsWith(testApp, own)).status).toBe(200);
      const old = await provider.token('alice', 'plants:read');
      expect((await listPlantsWith(testApp, old)).status).toBe(200);
    } finally {
      await testApp.close();
    }
  });
});
