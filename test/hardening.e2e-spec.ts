import { Logger } from '@nestjs/common';
import { chmodSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { makeTempFolder, startTestApp, type TestApp } from './helpers/test-app';
import { portOf } from './helpers/raw-http';
import { eventually } from './helpers/webhook-receiver';
import { apiSecurityHeaders } from '../src/platform/http/security-headers';
import { paceOf } from './helpers/pace';

/** Opens a raw TCP connection and resolves with all it received once the server closes it. */
function slowClient(port: number, send: (socket: Socket) => void) {
  return new Promise<{ received: string; closedAfterMs: number }>(
    (resolve, reject) => {
      const started = Date.now();
      const socket = connect(port, '127.0.0.1', () => send(socket));
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (chunk: string) => (received += chunk));
      socket.on('error', reject);
      socket.on('close', () =>
        resolve({ received, closedAfterMs: Date.now() - started }),
      );
    },
  );
}

/** Writes `text` one byte every `everyMs`, until the socket is closed under it. */
function dribble(socket: Socket, text: string, everyMs: number) {
  let index = 0;
  const timer = setInterval(() => {
    if (socket.destroyed || !socket.writable || index >= text.length)
      return clearInterval(timer);
    socket.write(text[index++]);
  }, everyMs);
  socket.on('close', () => clearInterval(timer));
}

describe('hardening', () => {
  let testApp: TestApp;
  let port: number;
  let token: string;

  beforeAll(async () => {
    testApp = await startTestApp({
      env: {
        HEADERS_TIMEOUT: '1s',
        REQUEST_TIMEOUT: '2s',
        CORS_ORIGINS: 'https://app.example.com',
      },
    });
    port = await portOf(testApp.server);
    token = await testApp.issueToken();
  });

  afterAll(() => testApp.close());

  describe('security headers', () => {
    // OWASP's REST set on every answer of the API; helmet's document headers on none of them
    const API_HEADERS = {
      'cache-control': 'no-store',
      'content-security-policy': "frame-ancestors 'none'",
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
    };
    const DOCUMENT_HEADERS = [
      'cross-origin-opener-policy',
      'cross-origin-resource-policy',
      'origin-agent-cluster',
      'referrer-policy',
      'strict-transport-security',
      'x-dns-prefetch-control',
      'x-download-options',
      'x-permitted-cross-domain-policies',
      'x-xss-protection',
    ];

    it.each([
      ['a public probe', 'GET', '/health/live', undefined, 200],
      ['an operation', 'GET', '/plants', 'token', 200],
      ['a 400 of an operation', 'GET', '/plants?limit=0', 'token', 400],
      ['the 404 of an unknown route', 'GET', '/nowhere', undefined, 404],
      ['a 401', 'GET', '/plants', undefined, 401],
      ['a preflight', 'OPTIONS', '/plants', undefined, 204],
    ])(
      "sets OWASP's REST headers on %s, and no document headers",
      async (_label, method, path, auth, status) => {
        const request =
          method === 'OPTIONS'
            ? testApp
                .http()
                .options(path)
                .set('Origin', 'https://app.example.com')
                .set('Access-Control-Request-Method', 'GET')
            : testApp.http().get(path);
        if (auth) request.set('Authorization', `Bearer ${token}`);
        const response = await request;
        expect(response.status).toBe(status);
        expect(response.headers).toMatchObject(API_HEADERS);
        for (const name of [...DOCUMENT_HEADERS, 'x-powered-by']) {
          expect([name, response.headers[name]]).toEqual([name, undefined]);
        }
      },
    );

    it.each([
      ['the docs page', '/docs'],
      ['an asset of the page', '/docs/swagger-ui.css'],
      ['the OpenAPI document', '/openapi.json'],
      ['the OpenAPI document in YAML', '/openapi.yaml'],
    ])("keeps helmet's full set on %s", async (_label, path) => {
      const response = await testApp.http().get(path).redirects(1);
      expect(response.status).toBe(200);
      expect(response.headers['x-content-type-options']).toBe('nosniff');
      expect(response.headers['x-frame-options']).toBe('SAMEORIGIN');
      expect(response.headers['content-security-policy']).toContain(
        "default-src 'self'",
      );
      expect(response.headers['content-security-policy']).not.toContain(
        'upgrade-insecure-requests',
      );
      expect(response.headers['x-dns-prefetch-control']).toBe('off');
      expect(response.headers['origin-agent-cluster']).toBe('?1');
      // plain HTTP here: HSTS only where PUBLIC_BASE_URL is HTTPS (below)
      expect(response.headers['strict-transport-security']).toBeUndefined();
      expect(response.headers['x-powered-by']).toBeUndefined();
    });

    it('adds HSTS, without subdomains, on the API and the docs page where PUBLIC_BASE_URL is HTTPS', async () => {
      const behindTls = await startTestApp({
        env: { PUBLIC_BASE_URL: 'https://plants.example.com' },
      });
      try {
        for (const path of ['/health/live', '/nowhere', '/openapi.json']) {
          const response = await behindTls.http().get(path);
          expect([path, response.headers['strict-transport-security']]).toEqual(
            [path, 'max-age=31536000'],
          );
        }
      } finally {
        await behindTls.close();
      }
    });
  });

  describe('CORS', () => {
    it('allows an origin on the allowlist', async () => {
      const response = await testApp
        .http()
        .get('/health/live')
        .set('Origin', 'https://app.example.com');
      expect(response.headers['access-control-allow-origin']).toBe(
        'https://app.example.com',
      );
    });

    it('lets a page read the headers the API answers with', async () => {
      const response = await testApp
        .http()
        .get('/health/live')
        .set('Origin', 'https://app.example.com');
      expect(
        response.headers['access-control-expose-headers'].split(','),
      ).toEqual(
        expect.arrayContaining([
          'Link',
          'Location',
          'ETag',
          'Idempotent-Replayed',
          'Retry-After',
        ]),
      );
    });

    it('names no other origin', async () => {
      const response = await testApp
        .http()
        .get('/health/live')
        .set('Origin', 'https://evil.example.com');
      expect(response.headers['access-control-allow-origin']).toBeUndefined();
    });

    it('answers a preflight with 204 and the allowed headers, and counts it like any request', async () => {
      const response = await testApp
        .http()
        .options('/plants')
        .set('Origin', 'https://app.example.com')
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'Authorization, Content-Type');
      expect(response.status).toBe(204);
      expect(response.headers['access-control-allow-origin']).toBe(
        'https://app.example.com',
      );
      expect(response.headers['access-control-allow-headers']).toBe(
        'Authorization,Content-Type,X-Request-Id,Idempotency-Key,If-Match,If-None-Match',
      );
      // charged to its address, as any request without a token
      expect(response.headers['ratelimit-limit']).toBeDefined();
    });

    it('is off without CORS_ORIGINS', async () => {
      const plain = await startTestApp();
      try {
        const response = await plain
          .http()
          .get('/health/live')
          .set('Origin', 'https://app.example.com');
        expect(response.headers['access-control-allow-origin']).toBeUndefined();
      } finally {
        await plain.close();
      }
    });
  });

  describe('slow and broken clients', () => {
    // a margin of 20 requests at this machine's pace, over each timeout's own
    const paceNow = () =>
      paceOf(() => fetch(`http://127.0.0.1:${port}/health/live`));

    it('closes a connection whose headers arrive a byte at a time, past HEADERS_TIMEOUT', async () => {
      const pace = await paceNow();
      const { received, closedAfterMs } = await slowClient(port, (socket) =>
        dribble(
          socket,
          `GET /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nX-Pad: ${'a'.repeat(200)}\r\n\r\n`,
          50,
        ),
      );
      expect(closedAfterMs).toBeLessThan(4000 + 20 * pace);
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
      expect(received).toContain(
        '{"error":408,"message":"the request did not arrive in time"}',
      );
    });

    it('closes a connection whose body arrives a byte at a time, past REQUEST_TIMEOUT', async () => {
      const body = JSON.stringify({ id: 1, name: 'x'.repeat(400) });
      const pace = await paceNow();
      const { received, closedAfterMs } = await slowClient(port, (socket) => {
        socket.write(
          `POST /plants HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
        );
        dribble(socket, body, 20);
      });
      expect(closedAfterMs).toBeLessThan(5000 + 20 * pace);
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
      expect(received).toContain(
        '{"error":408,"message":"the request did not arrive in time"}',
      );
      expect(
        await testApp.query('SELECT count(*) AS n FROM plants WHERE id = 1'),
      ).toEqual([{ n: 0n }]);
    });

    it('answers headers over 16 KiB with a 400 Error', async () => {
      const { received } = await slowClient(port, (socket) =>
        socket.write(
          `GET /health/live HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        ),
      );
      expect(received).toMatch(/^HTTP\/1\.1 400 /);
      expect(received).toContain(
        '{"error":400,"message":"request headers are larger than 16 KiB"}',
      );
    });

    it('answers bytes that are not HTTP with a 400 Error', async () => {
      const { received } = await slowClient(port, (socket) =>
        socket.write('\u0016\u0003\u0001 not http at all\r\n\r\n'),
      );
      expect(received).toMatch(/^HTTP\/1\.1 400 /);
      expect(received).toContain('"error":400');
    });

    it('gives protocol errors the security headers and a request id of every other answer', async () => {
      const ordinary = await testApp.http().get('/health/live').expect(200);
      const { received } = await slowClient(port, (socket) =>
        socket.write('not http at all\r\n\r\n'),
      );
      const head = received.slice(0, received.indexOf('\r\n\r\n'));
      const raw = new Map(
        head
          .split('\r\n')
          .slice(1)
          .map((line) => {
            const colon = line.indexOf(':');
            return [
              line.slice(0, colon).toLowerCase(),
              line.slice(colon + 1).trim(),
            ] as const;
          }),
      );
      const securityHeaders = Object.keys(apiSecurityHeaders()).map((name) =>
        name.toLowerCase(),
      );
      expect(securityHeaders).toEqual([
        'cache-control',
        'content-security-policy',
        'x-content-type-options',
        'x-frame-options',
      ]);
      for (const name of securityHeaders) {
        expect([name, raw.get(name)]).toEqual([name, ordinary.headers[name]]);
      }
      expect(raw.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    });
  });
});

describe.each([
  ['no proxy is trusted', 'false'],
  // every peer would be a proxy: the cap would then hold for no one
  ['TRUST_PROXY=true', 'true'],
  ['a hop count is trusted', '1'],
])(
  'connections per client address (MAX_CONNECTIONS_PER_ADDRESS), when %s',
  (_, trust) => {
    let testApp: TestApp;
    let port: number;

    beforeAll(async () => {
      testApp = await startTestApp({
        env: { MAX_CONNECTIONS_PER_ADDRESS: '3', TRUST_PROXY: trust },
      });
      port = await portOf(testApp.server);
    });

    afterAll(() => testApp.close());

    const open = () =>
      new Promise<Socket>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => resolve(socket));
        socket.on('error', reject);
      });
    const answerOf = (socket: Socket, request = '') =>
      new Promise<string>((resolve) => {
        let received = '';
        socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
        socket.on('close', () => resolve(received));
        if (request) socket.write(request);
      });

    it('refuses a connection past the cap with a 429 Error, and takes one again when another closes', async () => {
      const held = [await open(), await open(), await open()];
      const refused = await answerOf(await open());
      expect(refused).toMatch(/^HTTP\/1\.1 429 /);
      expect(refused).toContain(
        '{"error":429,"message":"too many connections from this address (for IPv6, its /64): at most 3 at a time"}',
      );
      held[0].destroy();
      await new Promise((resolve) => setTimeout(resolve, 100));
      const served = await answerOf(
        await open(),
        'GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
      );
      expect(served).toMatch(/^HTTP\/1\.1 200 /);
      held.forEach((socket) => socket.destroy());
    });
  },
);

describe('connections of IPv6 clients', () => {
  it('are counted by their /64, as the rate limits count them: one host holds a whole /64', async () => {
    const testApp = await startTestApp({
      env: { MAX_CONNECTIONS_PER_ADDRESS: '3' },
    });
    // loopback has one IPv6 address: each connection is given the one it would come from
    const peers = [
      '2001:db8:1:2::a',
      '2001:db8:1:2::b',
      '2001:db8:1:2:ffff:ffff:ffff:ffff',
      '2001:db8:1:2::d',
      '2001:db8:1:3::a',
    ];
    const accepted: Socket[] = [];
    testApp.server.prependListener('connection', (socket: Socket) => {
      accepted.push(socket);
      Object.defineProperty(socket, 'remoteAddress', { value: peers.shift() });
    });
    try {
      const port = await portOf(testApp.server);
      const open = () =>
        new Promise<Socket>((resolve, reject) => {
          const socket = connect(port, '127.0.0.1', () => resolve(socket));
          socket.on('error', reject);
        });
      const answerOf = (socket: Socket) =>
        new Promise<string>((resolve) => {
          let received = '';
          socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
          socket.on('close', () => resolve(received));
          socket.write(
            'GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
          );
        });
      const held: Socket[] = [];
      try {
        held.push(await open(), await open(), await open());
        expect(await answerOf(await open())).toContain(
          '{"error":429,"message":"too many connections from this address (for IPv6, its /64): at most 3 at a time"}',
        );
        // another /64 is another client
        expect(await answerOf(await open())).toMatch(/^HTTP\/1\.1 200 /);
      } finally {
        held.forEach((socket) => socket.destroy());
      }
      // the refused one too, though it had sent its request
      await eventually(
        () =>
          new Promise<number>((resolve, reject) =>
            testApp.server.getConnections((error, count) =>
              error ? reject(error) : resolve(count),
            ),
          ),
        (count) => count === 0,
        2000,
      );
    } finally {
      // whatever this test found left open, so that closing cannot wait for it
      accepted.forEach((socket) => socket.destroy());
      await testApp.close();
    }
  });
});

describe('connections of a proxy named in TRUST_PROXY', () => {
  it('are not capped: its clients are limited per request, by the address it forwards for', async () => {
    const testApp = await startTestApp({
      env: { MAX_CONNECTIONS_PER_ADDRESS: '2', TRUST_PROXY: 'loopback' },
    });
    try {
      const port = await portOf(testApp.server);
      const sockets = await Promise.all(
        Array.from(
          { length: 4 },
          () =>
            new Promise<Socket>((resolve, reject) => {
              const socket = connect(port, '127.0.0.1', () => resolve(socket));
              socket.on('error', reject);
            }),
        ),
      );
      const answers = await Promise.all(
        sockets.map(
          (socket) =>
            new Promise<string>((resolve) => {
              let received = '';
              socket.on(
                'data',
                (chunk: Buffer) => (received += chunk.toString()),
              );
              socket.on('close', () => resolve(received));
              socket.write(
                'GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n',
              );
            }),
        ),
      );
      for (const answer of answers) expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    } finally {
      await testApp.close();
    }
  });
});

describe('the database file', () => {
  it('when it already exists open to others, is tightened, and its folder left as it is; the boot says so', async () => {
    const folder = makeTempFolder();
    const databaseFile = join(folder.path, 'loose', 'store.sqlite');
    try {
      mkdirSync(join(folder.path, 'loose'), { mode: 0o755 });
      chmodSync(join(folder.path, 'loose'), 0o755);
      writeFileSync(databaseFile, '', { mode: 0o644 });
      chmodSync(databaseFile, 0o644);
      const warned: string[] = [];
      const warn = jest
        .spyOn(Logger.prototype, 'warn')
        .mockImplementation((message: unknown) => {
          warned.push(String(message));
        });
      try {
        const testApp = await startTestApp({ databaseFile });
        await testApp.close();
      } finally {
        warn.mockRestore();
      }
      expect(statSync(join(folder.path, 'loose')).mode & 0o777).toBe(0o755);
      expect(statSync(databaseFile).mode & 0o777).toBe(0o600);
      expect(warned).toEqual(
        expect.arrayContaining([
          expect.stringContaining(
            `the SQLite database's folder ${join(folder.path, 'loose')} is mode 755, open to other users: it is left as it is`,
          ),
          `${databaseFile} was mode 644, open to other users; made it 600`,
        ]),
      );
    } finally {
      folder.remove();
    }
  });

  it('and its folder are created readable by the service user only', async () => {
    const folder = makeTempFolder();
    const databaseFile = join(folder.path, 'fresh', 'store.sqlite');
    try {
      const testApp = await startTestApp({ databaseFile });
      await testApp.close();
      expect(statSync(join(folder.path, 'fresh')).mode & 0o777).toBe(0o700);
      expect(statSync(databaseFile).mode & 0o777).toBe(0o600);
    } finally {
      folder.remove();
    }
  });
});
