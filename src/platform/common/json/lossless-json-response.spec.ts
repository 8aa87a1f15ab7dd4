import express, { type Request, type Response } from 'express';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { JsonText, stringifyLosslessJson } from './lossless-json';
import { useLosslessJsonResponses } from './lossless-json-response';

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * An express app whose one route answers `res.status(status).json(body)`, with a header set
 * first when asked. `reference` answers through express's own `res.send`, as the service did
 * before it wrote its usual answers itself.
 */
function app(reference: boolean, etag: boolean) {
  const instance = express();
  instance.set('etag', etag);
  if (reference) {
    instance.response.json = function (this: Response, body: unknown) {
      if (!this.get('Content-Type')) {
        this.set('Content-Type', 'application/json; charset=utf-8');
      }
      return this.send(stringifyLosslessJson(body));
    };
  } else {
    useLosslessJsonResponses(instance);
  }
  instance.all('/answer', (request: Request, response: Response) => {
    const type = request.query.type;
    if (typeof type === 'string') response.setHeader('Content-Type', type);
    response
      .status(Number(request.query.status ?? 200))
      .json(
        BODIES[
          typeof request.query.body === 'string' ? request.query.body : 'plant'
        ],
      );
  });
  return instance;
}

const BODIES: Record<string, unknown> = {
  plant: { id: 9007199254740993n, name: 'Monstera', tag: null },
  // past the 1,000 characters where res.send turns the text into a Buffer
  page: Array.from({ length: 60 }, (_, i) => ({ id: BigInt(i), name: 'é 🌿' })),
  error: { error: 404, message: 'no plant with id 5 exists' },
  // JSON written already, with a header of its answer
  versioned: new JsonText('{"id":5,"name":"Ivy"}', { ETag: '"3"' }),
  // an answer recorded under an Idempotency-Key, replayed whatever the route's status
  recorded: new JsonText(
    '{"error":400,"message":"a plant with id 5 already exists"}',
    { 'Idempotent-Replayed': 'true' },
    400,
  ),
};

async function ask(
  server: ReturnType<ReturnType<typeof app>['listen']>,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const { port } = server.address() as AddressInfo;
  return new Promise((resolve, reject) => {
    const sent = httpRequest(
      { host: '127.0.0.1', port, method, path, headers, agent: false },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (body += chunk));
        response.on('end', () => {
          // the one header that differs between two answers a second apart
          const headers = { ...response.headers };
          delete headers.date;
          resolve({ status: response.statusCode ?? 0, headers, body });
        });
      },
    );
    sent.on('error', reject);
    sent.end();
  });
}

describe('useLosslessJsonResponses', () => {
  const servers: ReturnType<ReturnType<typeof app>['listen']>[] = [];
  const listening = (instance: ReturnType<typeof app>) =>
    new Promise<(typeof servers)[number]>((resolve) => {
      const server = instance.listen(0, '127.0.0.1', () => resolve(server));
      servers.push(server);
    });

  afterAll(async () => {
    await Promise.all(
      servers.map((server) => new Promise((resolve) => server.close(resolve))),
    );
  });

  const cases: [string, string, Record<string, string>?][] = [
    ['GET', '/answer'],
    ['GET', '/answer?body=page'],
    ['GET', '/answer?body=error&status=404'],
    ['POST', '/answer?status=201'],
    ['HEAD', '/answer'],
    ['GET', '/answer?status=204'],
    ['GET', '/answer?status=205'],
    ['GET', '/answer?status=304'],
    ['GET', '/answer?type=application%2Fvnd.plants%2Bjson'],
    ['GET', '/answer', { 'If-None-Match': '*' }],
    ['GET', '/answer', { 'If-None-Match': '"abc"' }],
    [
      'GET',
      '/answer',
      { 'If-Modified-Since': 'Tue, 01 Jan 2030 00:00:00 GMT' },
    ],
  ];

  it.each([false, true])(
    'answers exactly as res.send would, status, headers in order and body (ETags on: %s)',
    async (etag) => {
      const ours = await listening(app(false, etag));
      const reference = await listening(app(true, etag));
      for (const [method, path, headers] of cases) {
        const expected = await ask(reference, method, path, headers);
        const got = await ask(ours, method, path, headers);
        expect([method, path, headers, got]).toEqual([
          method,
          path,
          headers,
          expected,
        ]);
        expect(Object.keys(got.headers)).toEqual(Object.keys(expected.headers));
      }
    },
  );

  it('writes bigints as exact JSON numbers and leaves out null members', async () => {
    const ours = await listening(app(false, false));
    const answer = await ask(ours, 'GET', '/answer');
    expect(answer.body).toBe('{"id":9007199254740993,"name":"Monstera"}');
    expect(answer.headers['content-type']).toBe(
      'application/json; charset=utf-8',
    );
    expect(answer.headers['content-length']).toBe(String(answer.body.length));
  });

  it('sets the headers JSON written already carries, and answers 304 to an If-None-Match that names its ETag', async () => {
    const ours = await listening(app(false, false));
    const answer = await ask(ours, 'GET', '/answer?body=versioned');
    expect([answer.status, answer.headers.etag, answer.body]).toEqual([
      200,
      '"3"',
      '{"id":5,"name":"Ivy"}',
    ]);
    const fresh = await ask(ours, 'GET', '/answer?body=versioned', {
      'If-None-Match': '"3"',
    });
    expect([fresh.status, fresh.headers.etag, fresh.body]).toEqual([
      304,
      '"3"',
      '',
    ]);
    const stale = await ask(ours, 'GET', '/answer?body=versioned', {
      'If-None-Match': '"2"',
    });
    expect([stale.status, stale.body]).toEqual([200, '{"id":5,"name":"Ivy"}']);
  });

  it("answers with the status JSON written already carries, over the route's", async () => {
    const ours = await listening(app(false, false));
    const answer = await ask(ours, 'POST', '/answer?body=recorded&status=201');
    expect(answer).toEqual({
      status: 400,
      headers: expect.objectContaining({
        'idempotent-replayed': 'true',
        'content-type': 'application/json; charset=utf-8',
      }) as unknown,
      body: '{"error":400,"message":"a plant with id 5 already exists"}',
    });
  });
});
