import { Agent } from 'node:http';
import { portOf, sendRaw } from './helpers/raw-http';
import { ENGINE, startTestApp, type TestApp } from './helpers/test-app';

const INT64_MESSAGE =
  'id must be an integer between -9223372036854775808 and 9223372036854775807';

describe('POST /plants', () => {
  let testApp: TestApp;
  let token: string;

  beforeAll(async () => {
    testApp = await startTestApp();
    token = await testApp.issueToken();
  });

  afterAll(async () => {
    await testApp.close();
  });

  async function storedPlant(id: bigint) {
    const [row] = await testApp.query<{
      id: bigint;
      name: string;
      tag: string | null;
    }>('SELECT id, name, tag FROM plants WHERE id = ?', id);
    return row;
  }

  async function plantCount(): Promise<bigint> {
    const [{ n }] = await testApp.query<{ n: bigint }>(
      'SELECT count(*) AS n FROM plants',
    );
    return n;
  }

  function postRaw(body: string | Buffer, contentType = 'application/json') {
    const call = testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`);
    if (contentType) call.set('Content-Type', contentType);
    return call.send(body);
  }

  const postJson = (value: unknown) => postRaw(JSON.stringify(value));

  async function expectRejected(
    response: Promise<{
      status: number;
      body: unknown;
      headers: Record<string, string>;
    }>,
    message: string | RegExp,
  ) {
    const before = await plantCount();
    const { status, body, headers } = await response;
    expect(status).toBe(400);
    expect(headers['content-type']).toMatch(/^application\/json/);
    expect(body).toEqual({
      error: 400,
      message:
        typeof message === 'string' ? message : expect.stringMatching(message),
    });
    expect(await plantCount()).toBe(before);
  }

  describe('a valid NewPlant', () => {
    it('answers 200 with the stored plant, committed before the answer', async () => {
      const response = await postJson({
        id: 1,
        name: 'Monstera',
        tag: 'tropical',
      });
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      expect(response.body).toEqual({
        id: 1,
        name: 'Monstera',
        tag: 'tropical',
      });
      expect(await storedPlant(1n)).toEqual({
        id: 1n,
        name: 'Monstera',
        tag: 'tropical',
      });
    });

    it('has no tag key at all when created without a tag', async () => {
      const response = await postJson({ id: 2, name: 'Fern' });
      expect(response.status).toBe(200);
      expect(response.text).toBe('{"id":2,"name":"Fern"}');
      expect((await storedPlant(2n))?.tag).toBeNull();
    });

    it.each([
      ['-9223372036854775808', -9223372036854775808n],
      ['9223372036854775807', 9223372036854775807n],
      ['9007199254740993', 9007199254740993n],
    ])('stores and returns the id %s exactly', async (text, id) => {
      const response = await postRaw(`{"id":${text},"name":"exact"}`);
      expect(response.status).toBe(200);
      expect(response.text).toBe(`{"id":${text},"name":"exact"}`);
      expect((await storedPlant(id))?.id).toBe(id);
    });

    it.each([
      ['50.0', 50],
      ['51e0', 51],
      ['5.2e1', 52],
    ])('accepts %s as the integer %d', async (text, id) => {
      const response = await postRaw(`{"id":${text},"name":"integral"}`);
      expect(response.status).toBe(200);
      expect(response.text).toBe(`{"id":${id},"name":"integral"}`);
      expect((await storedPlant(BigInt(id)))?.id).toBe(BigInt(id));
    });

    it.each<[string, number, string]>([
      ['the empty string', 200, ''],
      ['emoji and combining marks', 201, '🌵 Cactus e\u0301 \u{1F3FD}'],
      ['CJK and right-to-left text', 202, '多肉植物 نبات'],
      // PostgreSQL text cannot hold U+0000: test/postgres.e2e-spec.ts checks its 400 there
      ...(ENGINE === 'sqlite'
        ? [['a NUL character', 203, 'a\u0000b'] as [string, number, string]]
        : []),
    ])(
      'accepts %s as name and returns it exactly',
      async (_label, id, name) => {
        const response = await postJson({ id, name, tag: name });
        expect(response.status).toBe(200);
        expect(response.body).toEqual({ id, name, tag: name });
        expect(await storedPlant(BigInt(id))).toEqual({
          id: BigInt(id),
          name,
          tag: name,
        });
      },
    );

    it('ignores extra properties: not stored, not echoed', async () => {
      const response = await postJson({
        id: 3,
        name: 'Ivy',
        color: 'green',
        nested: { a: 1 },
      });
      expect(response.status).toBe(200);
      expect(response.text).toBe('{"id":3,"name":"Ivy"}');
    });

    it('keeps __proto__ and constructor keys away from any prototype', async () => {
      const response = await postRaw(
        '{"id":4,"name":"Aloe","__proto__":{"polluted":true,"tag":"injected"},"constructor":{"prototype":{"polluted":true}}}',
      );
      expect(response.status).toBe(200);
      expect(response.text).toBe('{"id":4,"name":"Aloe"}');
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect((await storedPlant(4n))?.tag).toBeNull();
    });
  });

  describe('content failures answer 400 with the Error shape and store nothing', () => {
    it('rejects a request without a body', () =>
      expectRejected(
        postRaw(''),
        'request body is required: send a JSON object',
      ));

    it('rejects malformed JSON, saying where', () =>
      expectRejected(
        postRaw('{"id": 7, "name": '),
        /^request body is not valid JSON: .*position 18/,
      ));

    it.each([
      ['an array', '[{"id":7,"name":"x"}]'],
      ['a string', '"plant"'],
      ['a number', '7'],
      ['null', 'null'],
      ['a boolean', 'true'],
    ])('rejects JSON that is %s rather than an object', (label, body) =>
      expectRejected(
        postRaw(body),
        `request body must be a JSON object, got ${label}`,
      ),
    );

    it.each([
      [
        'an unknown property',
        (deep: string) => `{"id":7,"name":"x","extra":${deep}}`,
      ],
      ['name', (deep: string) => `{"id":7,"name":${deep}}`],
      ['the whole body', (deep: string) => deep],
    ])(
      'rejects arrays or objects nested past 32 levels in %s, saying where',
      (_where, body) =>
        Promise.all(
          [
            '['.repeat(3500) + ']'.repeat(3500),
            '{"a":'.repeat(1300) + '1' + '}'.repeat(1300),
            '['.repeat(33) + ']'.repeat(33),
          ].map((deep) =>
            expectRejected(
              postRaw(body(deep)),
              /^request body nests arrays or objects deeper than 32 levels \(at character \d+\)$/,
            ),
          ),
        ),
    );

    it('accepts nesting up to 32 levels in a property it then drops', async () => {
      const response = await postRaw(
        `{"id":7032,"name":"x","extra":${'['.repeat(31)}${']'.repeat(31)}}`,
      ).expect(200);
      expect(response.text).toBe('{"id":7032,"name":"x"}');
    });

    it('rejects a wrong Content-Type', () =>
      expectRejected(
        postRaw('{"id":7,"name":"x"}', 'text/plain'),
        'Content-Type must be application/json, got "text/plain"',
      ));

    it('rejects a missing Content-Type', async () => {
      const response = await sendRaw(await portOf(testApp.server), {
        path: '/plants',
        headers: { Authorization: `Bearer ${token}` },
        body: '{"id":7,"name":"x"}',
      });
      expect(response.status).toBe(400);
      expect(JSON.parse(response.text)).toEqual({
        error: 400,
        message: 'Content-Type must be application/json, got ""',
      });
      expect(await storedPlant(7n)).toBeUndefined();
    });

    it('rejects a charset other than UTF-8', () =>
      expectRejected(
        postRaw('{"id":7,"name":"x"}', 'application/json; charset=latin1'),
        'request body must be UTF-8 encoded, got charset "latin1"',
      ));

    it('rejects bytes that are not UTF-8', async () => {
      const before = await plantCount();
      const response = await sendRaw(await portOf(testApp.server), {
        path: '/plants',
        headers: {
          'Content-Type': 'application/json',
          Authorization: `Bearer ${token}`,
        },
        body: Buffer.concat([
          Buffer.from('{"id":9,"name":"'),
          Buffer.from([0xff]),
          Buffer.from('"}'),
        ]),
      });
      expect(response.status).toBe(400);
      expect(JSON.parse(response.text)).toEqual({
        error: 400,
        message: 'request body is not valid UTF-8',
      });
      expect(await plantCount()).toBe(before);
    });

    it('rejects a body over BODY_LIMIT', () =>
      expectRejected(
        postJson({ id: 7, name: 'x'.repeat(17 * 1024) }),
        'request body is larger than the limit of 16384 bytes',
      ));

    it('keeps the connection usable after a body over the limit', async () => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const port = await portOf(testApp.server);
      const post = (value: unknown) =>
        sendRaw(port, {
          path: '/plants',
          agent,
          headers: {
            'Content-Type': 'application/json',
            Authorization: `Bearer ${token}`,
          },
          body: JSON.stringify(value),
        });
      try {
        const tooLarge = await post({ id: 8, name: 'x'.repeat(20000) });
        expect(tooLarge.status).toBe(400);
        const next = await post({ id: 8, name: 'after' });
        expect(next).toMatchObject({
          status: 200,
          reusedSocket: true,
          text: '{"id":8,"name":"after"}',
        });
      } finally {
        agent.destroy();
      }
    });

    it('rejects a missing id', () =>
      expectRejected(postJson({ name: 'x' }), 'id is required'));

    it('rejects a missing name', () =>
      expectRejected(postJson({ id: 7 }), 'name is required'));

    it('names every wrong field in one message', () =>
      expectRejected(
        postJson({ id: 'seven', tag: 3 }),
        `${INT64_MESSAGE}; name is required; tag must be a string`,
      ));

    it.each([
      ['the string "5"', '"5"'],
      ['true', 'true'],
      ['null', 'null'],
      ['1.5', '1.5'],
      ['an object', '{"value":5}'],
      ['2^63', '9223372036854775808'],
      ['-2^63-1', '-9223372036854775809'],
      ['1e21', '1e21'],
      ['1e400', '1e400'],
      ['2^53+1 with a fraction', '9007199254740993.5'],
    ])('rejects %s as id', (_label, id) =>
      expectRejected(postRaw(`{"id":${id},"name":"x"}`), INT64_MESSAGE),
    );

    it.each([
      ['a number', '5'],
      ['true', 'true'],
      ['null', 'null'],
      ['an object', '{}'],
      ['an array', '["x"]'],
    ])('rejects %s as name', (_label, name) =>
      expectRejected(
        postRaw(`{"id":7,"name":${name}}`),
        'name must be a string',
      ),
    );

    it.each([
      ['null', 'null'],
      ['a number', '5'],
      ['false', 'false'],
    ])('rejects %s as tag', (_label, tag) =>
      expectRejected(
        postRaw(`{"id":7,"name":"x","tag":${tag}}`),
        'tag must be a string',
      ),
    );

    it('rejects a name with a lone surrogate, which could not be stored exactly', () =>
      expectRejected(
        postRaw('{"id":7,"name":"a\\ud800b"}'),
        'name must be valid Unicode text (it contains a lone surrogate)',
      ));

    it('rejects a duplicate id and leaves the stored plant untouched', async () => {
      await postJson({ id: 42, name: 'Original', tag: 'first' }).expect(200);
      await expectRejected(
        postJson({ id: 42, name: 'Impostor' }),
        'a plant with id 42 already exists',
      );
      expect(await storedPlant(42n)).toEqual({
        id: 42n,
        name: 'Original',
        tag: 'first',
      });
    });

    it('rejects a duplicate of the largest id, exactly', async () => {
      await expectRejected(
        postRaw('{"id":9223372036854775807,"name":"again"}'),
        'a plant with id 9223372036854775807 already exists',
      );
    });
  });

  it('gives exactly one 200 among concurrent creates of one id', async () => {
    const attempts = Array.from({ length: 25 }, (_, i) =>
      postJson({ id: 777, name: `racer ${i}` }),
    );
    const statuses = (await Promise.all(attempts)).map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 400)).toHaveLength(24);
    expect(
      await testApp.query('SELECT count(*) AS n FROM plants WHERE id = 777'),
    ).toEqual([{ n: 1n }]);
  });
});
