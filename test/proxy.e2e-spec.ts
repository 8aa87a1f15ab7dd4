import pino from 'pino';
import { startTestApp, type TestApp } from './helpers/test-app';

/**
 * Behind a load balancer every connection comes from the balancer. With TRUST_PROXY naming it,
 * the client address of rate limits, blocks and logs is the one it forwards in X-Forwarded-For,
 * and, without PUBLIC_BASE_URL, links and the document name the URL the client used
 * (X-Forwarded-Proto and -Host). From a peer that is not trusted, those headers change nothing.
 * The tests' requests come from 127.0.0.1, which plays the balancer.
 */
describe('behind a proxy (TRUST_PROXY)', () => {
  let testApp: TestApp;
  const logged: string[] = [];

  beforeAll(() => {
    jest.spyOn(pino, 'destination').mockReturnValue({
      write: (line: string) => logged.push(line),
    } as unknown as ReturnType<typeof pino.destination>);
  });

  afterAll(() => jest.restoreAllMocks());

  afterEach(() => testApp?.close());

  const LIMITS = {
    RATE_LIMIT_PER_ADDRESS: '3',
    RATE_LIMIT_BAD_TOKENS: '2',
    RATE_LIMIT_WINDOW: '1h',
  };

  const from = (forwardedFor: string, path = '/openapi.json') =>
    testApp.http().get(path).set('X-Forwarded-For', forwardedFor);

  /** Statuses of `count` requests without a token, forwarded for `forwardedFor`. */
  const statuses = async (forwardedFor: string, count: number) => {
    const seen: number[] = [];
    for (let i = 0; i < count; i += 1) {
      seen.push((await from(forwardedFor)).status);
    }
    return seen;
  };

  it('from a trusted proxy, limits each forwarded client apart and logs it', async () => {
    testApp = await startTestApp({
      env: { ...LIMITS, TRUST_PROXY: 'loopback', LOG_LEVEL: 'info' },
    });
    expect(await statuses('203.0.113.1', 4)).toEqual([200, 200, 200, 429]);
    // another client behind the same balancer still has its whole limit
    expect(await statuses('203.0.113.2', 3)).toEqual([200, 200, 200]);
    const logLines = logged.map(
      (line) => JSON.parse(line) as { client?: string; msg?: string },
    );
    expect(
      logLines.filter((line) => line.client === '203.0.113.2'),
    ).toHaveLength(3);
  });

  it('from a trusted proxy, blocks the forwarded client that guesses tokens, not the others', async () => {
    testApp = await startTestApp({
      env: { ...LIMITS, TRUST_PROXY: 'loopback' },
    });
    const guess = (forwardedFor: string, digit: number) =>
      testApp
        .http()
        .get('/plants')
        .set('X-Forwarded-For', forwardedFor)
        .set('Authorization', `Bearer pst_${String(digit).repeat(43)}`);
    await guess('203.0.113.66', 1).expect(401);
    await guess('203.0.113.66', 2).expect(401);
    await guess('203.0.113.66', 3).expect(429);
    const token = await testApp.issueToken();
    const list = (forwardedFor: string) =>
      testApp
        .http()
        .get('/plants')
        .set('X-Forwarded-For', forwardedFor)
        .set('Authorization', `Bearer ${token}`);
    await list('203.0.113.66').expect(429);
    await list('203.0.113.67').expect(200);
  });

  it('from a peer that is not trusted, a spoofed X-Forwarded-For changes nothing', async () => {
    testApp = await startTestApp({ env: LIMITS });
    expect((await from('203.0.113.1')).status).toBe(200);
    expect((await from('203.0.113.2')).status).toBe(200);
    expect((await from('203.0.113.3')).status).toBe(200);
    // one address, whatever the header says
    expect((await from('203.0.113.4')).status).toBe(429);
  });

  it.each([
    // two trusted hops: the client is the address before them
    ['2', '198.51.100.9, 10.0.0.5', ['198.51.100.9, 10.0.0.6']],
    ['loopback, 10.0.0.0/8', '198.51.100.9, 10.0.0.5', ['198.51.100.9']],
    // one trusted hop: the last forwarded address is the client, whatever came before it
    ['1', '198.51.100.9, 10.0.0.5', ['192.0.2.1, 10.0.0.5']],
  ])(
    'with TRUST_PROXY=%s, "%s" shares its counter with %j',
    async (trustProxy, forwardedFor, sameClient) => {
      testApp = await startTestApp({
        env: { ...LIMITS, TRUST_PROXY: trustProxy },
      });
      expect(await statuses(forwardedFor, 2)).toEqual([200, 200]);
      expect(await statuses(sameClient[0], 1)).toEqual([200]);
      expect(await statuses(forwardedFor, 1)).toEqual([429]);
      // an unrelated client is counted apart
      expect(await statuses('192.0.2.200', 1)).toEqual([200]);
    },
  );

  describe('the URL clients reached the service at', () => {
    const listWithNext = async (headers: Record<string, string>) => {
      const token = await testApp.issueToken();
      for (const id of [1, 2]) {
        await testApp
          .http()
          .post('/plants')
          .set('Authorization', `Bearer ${token}`)
          .set('Content-Type', 'application/json')
          .send(`{"id":${id},"name":"Linked ${id}"}`)
          .expect(200);
      }
      const request = testApp
        .http()
        .get('/plants?limit=1')
        .set('Authorization', `Bearer ${token}`);
      for (const [name, value] of Object.entries(headers)) {
        request.set(name, value);
      }
      return (await request.expect(200)).headers.link;
    };
    const documentServer = async (headers: Record<string, string>) => {
      const request = testApp.http().get('/openapi.json');
      for (const [name, value] of Object.entries(headers)) {
        request.set(name, value);
      }
      const body = (await request.expect(200)).body as {
        servers: { url: string }[];
      };
      return body.servers[0].url;
    };
    const FORWARDED = {
      'X-Forwarded-Proto': 'https',
      'X-Forwarded-Host': 'plants.example.com',
    };

    it('from a trusted proxy without PUBLIC_BASE_URL, is the forwarded one, in the Link header and the document', async () => {
      testApp = await startTestApp({ env: { TRUST_PROXY: 'loopback' } });
      expect(await listWithNext(FORWARDED)).toBe(
        '<https://plants.example.com/plants?limit=1&after=1>; rel="next"',
      );
      expect(await documentServer(FORWARDED)).toBe(
        'https://plants.example.com',
      );
    });

    it('from a peer that is not trusted, is the Host it asked for: forwarded headers change nothing', async () => {
      testApp = await startTestApp();
      const port = (testApp.server.address() as { port: number }).port;
      expect(await listWithNext(FORWARDED)).toBe(
        `<http://127.0.0.1:${port}/plants?limit=1&after=1>; rel="next"`,
      );
      expect(await documentServer(FORWARDED)).toBe(`http://127.0.0.1:${port}`);
    });

    it('with PUBLIC_BASE_URL, is PUBLIC_BASE_URL, whatever a trusted proxy forwards', async () => {
      testApp = await startTestApp({
        env: {
          TRUST_PROXY: 'loopback',
          PUBLIC_BASE_URL: 'https://api.plants.example',
        },
      });
      expect(await listWithNext(FORWARDED)).toBe(
        '<https://api.plants.example/plants?limit=1&after=1>; rel="next"',
      );
      expect(await documentServer(FORWARDED)).toBe(
        'https://api.plants.example',
      );
    });

    it('tells a shared cache that the document and the docs page depend on the address asked', async () => {
      testApp = await startTestApp({ env: { TRUST_PROXY: 'loopback' } });
      for (const path of [
        '/openapi.json',
        '/openapi.yaml',
        '/docs/swagger-ui-init.js',
      ]) {
        const response = await testApp.http().get(path).expect(200);
        expect([path, response.headers.vary]).toEqual([
          path,
          'Host, X-Forwarded-Host, X-Forwarded-Proto',
        ]);
        expect(response.headers['cache-control']).toBe('no-cache');
      }
      // each address gets its own server, however many there are
      for (const host of ['a.example', 'b.example', 'c.example']) {
        expect(
          await documentServer({ ...FORWARDED, 'X-Forwarded-Host': host }),
        ).toBe(`https://${host}`);
      }
      const yaml = await testApp
        .http()
        .get('/openapi.yaml')
        .set('X-Forwarded-Host', 'yaml.example')
        .set('X-Forwarded-Proto', 'https')
        .expect(200);
      expect(yaml.text).toContain('  - url: "https://yaml.example"\n');
    });

    it('never writes a Host that is not a host name into a link', async () => {
      testApp = await startTestApp({
        env: { TRUST_PROXY: 'loopback', PORT: '3999' },
      });
      // the configured port's local URL instead
      expect(
        await listWithNext({
          'X-Forwarded-Host': 'evil.example>; rel="next", <x',
        }),
      ).toBe('<http://localhost:3999/plants?limit=1&after=1>; rel="next"');
    });
  });
});
