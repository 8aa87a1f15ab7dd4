import fc from 'fast-check';
import pino from 'pino';
import { Agent } from 'node:http';
import { portOf, sendRaw, type RawResponse } from './helpers/raw-http';
import type { Doc } from './helpers/openapi-contract';
import { ResponseContract } from './helpers/response-contract';
import { IdentityProvider } from './helpers/identity-provider';
import { startTestApp, type TestApp } from './helpers/test-app';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Requests per property; four properties make 10,000 generated requests a run. */
const RUNS = 2500;

interface StoredPlant {
  id: bigint;
  name: string;
  tag: string | null;
}

/** JSON text for a value that may hold bigints, written as exact numbers. */
function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, inner: unknown) =>
    typeof inner === 'bigint' ? `\u0000${inner}\u0000` : inner,
  ).replace(/"\\u0000(-?\d+)\\u0000"/g, '$1');
}

const oddNumberText = fc.constantFrom(
  '1e400',
  '-1e400',
  '-0',
  '0.0',
  '5.0',
  '5e0',
  '1.5',
  '9223372036854775808',
  '-9223372036854775809',
  '9223372036854775807',
  '-9223372036854775808',
  '9007199254740993',
  '1e21',
  '0e0',
  '123456789012345678901234567890',
  '00',
  '1E+2',
  '-',
  '1.',
  '.5',
  '0x10',
  'NaN',
  'Infinity',
);

const oddStringText = fc.oneof(
  fc.constantFrom(
    '"\\ud800"',
    '"\\udfff x"',
    '"a\\u0000b"',
    '""',
    '"\\\\"',
    `"${'x'.repeat(20_000)}"`,
  ),
  fc
    .string({ unit: 'binary', maxLength: 40 })
    .map((text) => JSON.stringify(text)),
);

const validPlant = fc.record(
  {
    id: fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
    name: fc
      .string({ unit: 'binary', maxLength: 60 })
      .filter((text) => text.isWellFormed()),
    tag: fc.string({ unit: 'grapheme', maxLength: 20 }),
  },
  { requiredKeys: ['id', 'name'] },
);

/** One field of a valid plant replaced by something odd, written as raw JSON text. */
const nearValidBody = fc
  .tuple(
    validPlant,
    fc.constantFrom('id', 'name', 'tag'),
    fc.oneof(oddNumberText, oddStringText, fc.jsonValue().map(toJson)),
  )
  .map(([plant, field, raw]) => {
    const rest: Record<string, unknown> = { ...plant };
    delete rest[field];
    const base = toJson(rest);
    return base === '{}'
      ? `{"${field}":${raw}}`
      : `${base.slice(0, -1)},"${field}":${raw}}`;
  });

/**
 * Bodies of extreme shape within the body limit: nesting thousands deep (in an unknown
 * property or in a field), arrays thousands wide, thousands of keys, long strings.
 */
const nested = (depth: number, open: string, close: string, inner = '1') =>
  open.repeat(depth) + inner + close.repeat(depth);
const extremeBody = fc.oneof(
  fc
    .tuple(
      fc.integer({ min: 1, max: 5000 }),
      fc.constantFrom('extra', 'name', 'tag', 'id'),
      fc.constantFrom<[string, string]>(['[', ']'], ['{"a":', '}']),
    )
    .map(
      ([depth, field, [open, close]]) =>
        `{"id":1,"name":"x","${field}":${nested(depth, open, close)}}`,
    ),
  fc.integer({ min: 1, max: 7000 }).map((depth) => nested(depth, '[', ']', '')),
  fc
    .tuple(fc.integer({ min: 1, max: 4000 }), fc.constantFrom('name', 'extra'))
    .map(
      ([width, field]) =>
        `{"id":2,"name":"x","${field}":[${Array<string>(width).fill('{}').join(',')}]}`,
    ),
  fc
    .integer({ min: 1, max: 1500 })
    .map(
      (keys) =>
        `{"id":3,"name":"x",${Array.from({ length: keys }, (_, key) => `"k${key}":${key}`).join(',')}}`,
    ),
  fc
    .tuple(fc.integer({ min: 0, max: 16_000 }), fc.constantFrom('name', 'tag'))
    .map(
      ([length, field]) =>
        `{"id":4,"name":"x","${field}":"${'\\u00e9'.repeat(length / 6)}${'y'.repeat(length % 6)}"}`,
    ),
);

const postBody = fc.oneof(
  extremeBody,
  validPlant.map(toJson),
  nearValidBody,
  fc.jsonValue().map((value) => JSON.stringify(value)),
  fc.json(),
  fc
    .uint8Array({ maxLength: 64 })
    .map((bytes) => Buffer.from(bytes).toString('latin1')),
  fc.constantFrom(
    '',
    '{',
    '[]',
    'null',
    '{"__proto__":{"id":1,"name":"x"}}',
    `{"id":1,"name":"${'x'.repeat(17_000)}"}`,
  ),
);

const contentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  fc.constantFrom(
    'application/json; charset=utf-8',
    'application/json; charset=latin1',
    'text/plain',
    'application/xml',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/json;;;',
    '',
  ),
);

/** Extra request headers of any name and printable value, but none that frames or routes it. */
const RESERVED_HEADERS = new Set([
  'content-length',
  'transfer-encoding',
  'host',
  'connection',
  'authorization',
  'content-type',
  'expect',
  'upgrade',
  // sent on purpose, below
  'idempotency-key',
]);
const randomHeaders = fc.dictionary(
  fc
    .stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,15}$/)
    .filter((name) => !RESERVED_HEADERS.has(name.toLowerCase())),
  fc.stringMatching(/^[\x20-\x7e]{0,40}$/).map((value) => value.trim()),
  { maxKeys: 4 },
);

/**
 * An Idempotency-Key, now and then: mostly from a few, so that repeats (and the same key with
 * another body) happen, sometimes one of any printable text and length, valid or not.
 */
const idempotencyKey = fc.option(
  fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom('fuzz-1', 'fuzz-2', 'fuzz-3') },
    { weight: 1, arbitrary: fc.stringMatching(/^[\x21-\x7e]{0,260}$/) },
    { weight: 1, arbitrary: fc.stringMatching(/^[\x20-\x7e]{1,20}$/) },
  ),
  { nil: undefined, freq: 3 },
);

const pathId = fc.oneof(
  fc.bigInt({ min: INT64_MIN - 10n, max: INT64_MAX + 10n }).map(String),
  fc.string({ unit: 'binary', maxLength: 30 }).map(encodeURIComponent),
  oddNumberText.map(encodeURIComponent),
);

const queryValue = fc.oneof(
  fc.integer({ min: -5, max: 1500 }).map(String),
  fc.bigInt({ min: INT64_MIN - 5n, max: INT64_MAX + 5n }).map(String),
  fc.string({ unit: 'binary', maxLength: 20 }),
  oddNumberText,
);

/** The app's token, once issued: a client that puts it in the query must not find it logged. */
let TOKEN_IN_QUERY = '';

const query = fc
  .record(
    {
      limit: queryValue,
      after: queryValue,
      tag: queryValue,
      other: queryValue,
      access_token: fc.constant(null).map(() => TOKEN_IN_QUERY),
    },
    { requiredKeys: [] },
  )
  .map((parameters) =>
    new URLSearchParams(parameters as Record<string, string>).toString(),
  );

describe('fuzzed requests against the real app (fast-check)', () => {
  let testApp: TestApp;
  let contract: ResponseContract;
  let port: number;
  let token: string;
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });

  /** Every line the app logs during the run, at info level. */
  const logged: string[] = [];

  beforeAll(async () => {
    jest.spyOn(pino, 'destination').mockReturnValue({
      write: (line: string) => logged.push(line),
    } as unknown as ReturnType<typeof pino.destination>);
    testApp = await startTestApp({ env: { LOG_LEVEL: 'info' } });
    port = await portOf(testApp.server);
    token = await testApp.issueToken();
    TOKEN_IN_QUERY = token;
    contract = new ResponseContract(
      (await testApp.http().get('/openapi.json')).body as Doc,
    );
  });

  afterAll(async () => {
    agent.destroy();
    await testApp.close();
  });

  const plantCount = async () =>
    (await testApp.query<{ n: bigint }>('SELECT count(*) AS n FROM plants'))[0]
      .n;
  const storedPlant = async (id: bigint) =>
    (
      await testApp.query<StoredPlant>(
        'SELECT id, name, tag FROM plants WHERE id = ?',
        id,
      )
    )[0];

  /** Every answer: never 5xx, a status the document lists for the operation, a body its schema accepts. */
  function expectHonest(method: string, path: string, response: RawResponse) {
    expect(response.status).toBeLessThan(500);
    expect(
      contract.check({
        method,
        path,
        status: response.status,
        contentType: response.headers['content-type'] as string,
        text: response.text,
      }),
    ).toBeUndefined();
  }

  it(`POST /plants: ${RUNS} bodies, content types and headers`, async () => {
    await fc.assert(
      fc.asyncProperty(
        postBody,
        contentType,
        fc.boolean(),
        randomHeaders,
        idempotencyKey,
        async (body, type, authorized, extra, key) => {
          const before = await plantCount();
          const headers: Record<string, string> = { ...extra };
          if (authorized) headers.Authorization = `Bearer ${token}`;
          if (type) headers['Content-Type'] = type;
          if (key !== undefined) headers['Idempotency-Key'] = key;
          const response = await sendRaw(port, {
            path: '/plants',
            headers,
            body,
            agent,
          });
          expectHonest('POST', '/plants', response);
          const replayed = response.headers['idempotent-replayed'] === 'true';
          if (replayed) expect(key).toBeDefined();
          if (response.status === 200 && !replayed) {
            const sent = JSON.parse(response.text) as {
              id: number;
              name: string;
              tag?: string;
            };
            const id = BigInt(/^\{"id":(-?\d+)/.exec(response.text)![1]);
            expect(await storedPlant(id)).toEqual({
              id,
              name: sent.name,
              tag: sent.tag ?? null,
            });
            expect(await plantCount()).toBe(before + 1n);
          } else {
            expect(await plantCount()).toBe(before);
          }
        },
      ),
      { numRuns: RUNS },
    );
  });

  it(`GET /plants: ${RUNS} query strings`, async () => {
    await fc.assert(
      fc.asyncProperty(query, async (search) => {
        const path = `/plants?${search}`;
        const response = await sendRaw(port, {
          method: 'GET',
          path,
          headers: { Authorization: `Bearer ${token}` },
          agent,
        });
        expectHonest('GET', path, response);
      }),
      { numRuns: RUNS },
    );
  });

  it(`GET /plants/{id}: ${RUNS} path ids`, async () => {
    await fc.assert(
      fc.asyncProperty(pathId, async (id) => {
        const path = `/plants/${id}`;
        const response = await sendRaw(port, {
          method: 'GET',
          path,
          headers: { Authorization: `Bearer ${token}` },
          agent,
        });
        expectHonest('GET', path, response);
      }),
      { numRuns: RUNS },
    );
  });

  it(`DELETE /plants/{id}: ${RUNS} path ids, deleting only what they name`, async () => {
    await fc.assert(
      fc.asyncProperty(
        pathId,
        fc.option(fc.string({ maxLength: 20 })),
        async (id, junk) => {
          const before = await plantCount();
          const path = `/plants/${id}`;
          const response = await sendRaw(port, {
            method: 'DELETE',
            path,
            headers:
              junk === null
                ? { Authorization: `Bearer ${token}` }
                : {
                    Authorization: `Bearer ${token}`,
                    'Content-Type': 'text/plain',
                  },
            body: junk ?? undefined,
            agent,
          });
          expectHonest('DELETE', path, response);
          expect(await plantCount()).toBe(
            response.status === 204 ? before - 1n : before,
          );
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('logged every request, and no token: not from headers, not from query strings', () => {
    expect(logged.length).toBeGreaterThan(4 * RUNS);
    const text = logged.join('');
    expect(text).toContain('"path":"/plants"');
    expect(text).toContain('"query":[');
    expect(text).not.toContain(token);
    expect(text).not.toContain(token.slice(4));
    expect(text).not.toMatch(/pst_[A-Za-z0-9_-]{43}/);
  });
});

/** A JWT's parts as base64url of JSON, or of anything. */
const segment = (json: fc.Arbitrary<unknown>) =>
  fc.oneof(
    json.map((value) =>
      Buffer.from(JSON.stringify(value) ?? 'null').toString('base64url'),
    ),
    fc
      .string({ unit: 'binary', maxLength: 40 })
      .map((text) => Buffer.from(text).toString('base64url')),
    fc.stringMatching(/^[\x21-\x7e]{0,30}$/),
  );

/** Tokens that look like an identity provider's, built to get past as many checks as they can. */
function jwtLike(provider: IdentityProvider, validToken: string) {
  const now = Math.floor(Date.now() / 1000);
  const header = fc.record(
    {
      alg: fc.constantFrom(
        'RS256',
        'ES256',
        'HS256',
        'none',
        'None',
        'PS256',
        'EdDSA',
        '',
        7,
      ),
      kid: fc.oneof(
        fc.constantFrom('key-1', 'key-2'),
        fc.string({ maxLength: 12 }),
        fc.integer(),
      ),
      typ: fc.constantFrom('at+jwt', 'JWT', 'jwt', 'id+jwt', null),
      crit: fc.constant(['exp']),
      jku: fc.constant('http://127.0.0.1:1/jwks'),
    },
    { requiredKeys: ['alg'] },
  );
  const payload = fc.record(
    {
      iss: fc.constantFrom(provider.issuer, `${provider.issuer}/`, '', null),
      aud: fc.oneof(
        fc.constantFrom(provider.audience, ['x', provider.audience], []),
        fc.integer(),
      ),
      sub: fc.oneof(
        fc.string({ maxLength: 20 }),
        fc.integer(),
        fc.constant(null),
      ),
      exp: fc.oneof(
        fc.integer({ min: now - 1000, max: now + 1000 }),
        fc.double(),
        fc.string(),
      ),
      nbf: fc.integer({ min: now - 1000, max: now + 1000 }),
      scope: fc.oneof(
        fc.constantFrom('plants:read', 'plants:write webhooks:manage'),
        fc.array(fc.string(), { maxLength: 3 }),
        fc.integer(),
      ),
      scp: fc.anything({ maxDepth: 2 }),
    },
    { requiredKeys: [] },
  );
  const [validHeader, validPayload, validSignature] = validToken.split('.');
  return fc.oneof(
    fc
      .tuple(
        segment(header),
        segment(payload),
        segment(fc.anything({ maxDepth: 1 })),
      )
      .map((parts) => parts.join('.')),
    // a real token with one part swapped for garbage, or cut short
    fc
      .tuple(fc.nat(2), segment(payload))
      .map(([part, garbage]) =>
        [validHeader, validPayload, validSignature]
          .map((value, i) => (i === part ? garbage : value))
          .join('.'),
      ),
    fc.nat(validToken.length - 1).map((length) => validToken.slice(0, length)),
    fc.stringMatching(/^[\x21-\x7e]{1,300}$/),
  );
}

describe('fuzzed access tokens against the real app with an identity provider (fast-check)', () => {
  let provider: IdentityProvider;
  let testApp: TestApp;
  let contract: ResponseContract;
  let port: number;
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });

  beforeAll(async () => {
    provider = await IdentityProvider.start();
    testApp = await startTestApp({ env: provider.env() });
    port = await portOf(testApp.server);
    contract = new ResponseContract(
      (await testApp.http().get('/openapi.json')).body as Doc,
    );
  });

  afterAll(async () => {
    agent.destroy();
    await testApp.close();
    await provider.close();
  });

  it(`GET /plants: ${RUNS / 5} Authorization headers with JWT-like garbage, never a 5xx, never let in`, async () => {
    const valid = await provider.token('alice', 'plants:read');
    await fc.assert(
      fc.asyncProperty(jwtLike(provider, valid), async (token) => {
        const response = await sendRaw(port, {
          method: 'GET',
          path: '/plants',
          headers: { Authorization: `Bearer ${token}` },
          agent,
        });
        expect(response.status).toBeLessThan(500);
        expect(
          contract.check({
            method: 'GET',
            path: '/plants',
            status: response.status,
            contentType: response.headers['content-type'] as string,
            text: response.text,
          }),
        ).toBeUndefined();
        if (token !== valid) expect(response.status).not.toBe(200);
      }),
      { numRuns: RUNS / 5 },
    );
  });
});
