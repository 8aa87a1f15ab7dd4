import {
  BadRequestException,
  Body,
  Param,
  type ExecutionContext,
} from '@nestjs/common';
import type { Request, Response } from 'express';
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import type { AppConfig } from '../../config/app.config';
import {
  createJsonBodyReader,
  describeExcessiveNesting,
  describeReadingError,
  JsonBodyGuard,
} from './json-body.guard';

describe('describeReadingError', () => {
  it.each([
    [
      { type: 'entity.too.large', limit: 16384 },
      'request body is larger than the limit of 16384 bytes',
    ],
    [
      { type: 'request.aborted' },
      'request body was aborted before it was complete',
    ],
    [
      { type: 'request.size.invalid' },
      'request body length does not match its Content-Length',
    ],
    [
      { type: 'encoding.unsupported', encoding: 'gzip' },
      'Content-Encoding "gzip" is not supported; send the body uncompressed',
    ],
    [{ type: 'stream.not.readable' }, 'request body could not be read'],
  ])('explains the body-parser failure %j', (error, message) => {
    expect(describeReadingError(error)).toBe(message);
  });
});

describe('describeExcessiveNesting', () => {
  it('allows nesting up to the limit, counting arrays and objects alike', () => {
    expect(describeExcessiveNesting('[[{"a":[1]}]]', 4)).toBeUndefined();
    expect(describeExcessiveNesting('[][][][][]', 1)).toBeUndefined();
    expect(describeExcessiveNesting('{}{}{}{}{}', 1)).toBeUndefined();
  });

  it('names the character where the body goes one level too deep', () => {
    expect(describeExcessiveNesting('[[{"a":[1]}]]', 3)).toBe(
      'request body nests arrays or objects deeper than 3 levels (at character 8)',
    );
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(describeExcessiveNesting('{"a":"[[[[\\"[[[["}', 1)).toBeUndefined();
    expect(describeExcessiveNesting('["\\\\",[[1]]]', 2)).toBe(
      'request body nests arrays or objects deeper than 2 levels (at character 8)',
    );
  });
});

/** A request as express hands it over: the bytes to read, with their length and headers. */
function requestWith(
  bytes: Buffer | string,
  contentType?: string,
  more: Record<string, string> = {},
) {
  const data = Buffer.from(bytes);
  const headers: Record<string, string> = {
    'content-length': String(data.length),
    ...(contentType === undefined ? {} : { 'content-type': contentType }),
    ...more,
  };
  return Object.assign(Readable.from(data.length > 0 ? [data] : []), {
    headers,
    body: undefined,
    rawBody: undefined as Buffer | undefined,
    get: (name: string) => headers[name.toLowerCase()],
  });
}

describe('createJsonBodyReader', () => {
  const read = createJsonBodyReader(100);

  async function bodyOf(
    bytes: Buffer | string,
    contentType?: string,
    more: Record<string, string> = {},
  ) {
    const request = requestWith(bytes, contentType, more);
    await read(request as unknown as Request, {} as Response);
    return request.body;
  }

  /** The message of the 400 a body is refused with. */
  async function refusalOf(bytes: Buffer | string, contentType?: string) {
    const refusal = await bodyOf(bytes, contentType).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(BadRequestException);
    return (refusal as BadRequestException).message;
  }

  it('parses a JSON object, integers exactly', async () => {
    await expect(
      bodyOf('{"id":9223372036854775807,"x":1.5}', 'application/json'),
    ).resolves.toEqual({
      id: 9223372036854775807n,
      x: 1.5,
    });
  });

  it.each([
    'application/json; charset=utf-8',
    'application/json; charset=UTF8',
    'Application/JSON',
  ])('accepts the Content-Type %s', async (type) => {
    await expect(bodyOf('{"a":"b"}', type)).resolves.toEqual({ a: 'b' });
  });

  it('refuses an empty body: every operation that reads one takes an object', async () => {
    await expect(refusalOf('', 'application/json')).resolves.toBe(
      'request body is required: send a JSON object',
    );
  });

  it.each([
    ['[]', 'an array'],
    ['null', 'null'],
    ['"fern"', 'a string'],
    ['true', 'a boolean'],
    ['12', 'a number'],
  ])('refuses %s, which is JSON but no object', async (text, label) => {
    await expect(refusalOf(text, 'application/json')).resolves.toBe(
      `request body must be a JSON object, got ${label}`,
    );
  });

  it.each([
    [
      '{"a":1}',
      'text/plain',
      'Content-Type must be application/json, got "text/plain"',
    ],
    ['{"a":1}', undefined, 'Content-Type must be application/json, got ""'],
    [
      '{"a":1}',
      'application/json;;',
      'Content-Type must be application/json, got "application/json;;"',
    ],
    [
      '{"a":1}',
      'application/json; charset=latin1',
      'request body must be UTF-8 encoded, got charset "latin1"',
    ],
    [
      '{"a":1}',
      'application/json; charset=xutf-8',
      'request body must be UTF-8 encoded, got charset "xutf-8"',
    ],
    [
      '{"a":1}',
      'application/json; charset=utf-8x',
      'request body must be UTF-8 encoded, got charset "utf-8x"',
    ],
    [
      Buffer.from([0x7b, 0xff, 0x7d]),
      'application/json',
      'request body is not valid UTF-8',
    ],
    [
      '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]',
      'application/json',
      'request body nests arrays or objects deeper than 32 levels (at character 33)',
    ],
    [
      'x'.repeat(101),
      'application/json',
      'request body is larger than the limit of 100 bytes',
    ],
  ])('explains why %j (%s) cannot be read', async (bytes, type, reason) => {
    await expect(refusalOf(bytes, type)).resolves.toBe(reason);
  });

  it('refuses a compressed body rather than inflate it', async () => {
    const refusal = await bodyOf(gzipSync('{"a":1}'), 'application/json', {
      'content-encoding': 'gzip',
    }).catch((error: unknown) => error);
    expect(refusal).toEqual(
      new BadRequestException(
        'Content-Encoding "gzip" is not supported; send the body uncompressed',
      ),
    );
  });

  it('says where malformed JSON breaks', async () => {
    await expect(refusalOf('{"a": ', 'application/json')).resolves.toMatch(
      /^request body is not valid JSON: .+/,
    );
  });
});

describe('JsonBodyGuard', () => {
  class PlantsLike {
    create(@Body() body: object, @Param('id') id: string) {
      return [body, id];
    }
    read(@Param('id') id: string) {
      return id;
    }
    list() {
      return [];
    }
  }
  const guard = new JsonBodyGuard({ bodyLimitBytes: 100 } as AppConfig);

  function contextOf(handler: keyof PlantsLike, request: object) {
    return {
      getClass: () => PlantsLike,
      getHandler: () => PlantsLike.prototype[handler],
      switchToHttp: () => ({
        getRequest: () => request,
        getResponse: () => ({}),
      }),
    } as unknown as ExecutionContext;
  }

  /** What the guard left in the request: the body it read, and the bytes kept for a key. */
  async function guarded(handler: keyof PlantsLike, text: string) {
    const request = requestWith(text, 'application/json');
    const allowed = await guard.canActivate(contextOf(handler, request));
    return {
      allowed,
      body: request.body,
      rawBody: request.rawBody?.toString(),
      unread: request.readableLength,
    };
  }

  it('reads the body of an operation with a @Body() parameter, and keeps its bytes', async () => {
    expect(await guarded('create', '{"id":7}')).toEqual({
      allowed: true,
      body: { id: 7n },
      rawBody: '{"id":7}',
      unread: 0,
    });
  });

  it('never reads the body of an operation that takes none', async () => {
    for (const handler of ['read', 'list'] as const) {
      const { allowed, body, rawBody } = await guarded(handler, '{"id":7}');
      expect({ allowed, body, rawBody }).toEqual({
        allowed: true,
        body: undefined,
        rawBody: undefined,
      });
    }
  });

  it("reads an operation's parameters once, not at every request", async () => {
    const reads = jest.spyOn(Reflect, 'getMetadata');
    try {
      const fresh = new JsonBodyGuard({ bodyLimitBytes: 100 } as AppConfig);
      const before = reads.mock.calls.length;
      for (let i = 0; i < 3; i += 1) {
        await fresh.canActivate(
          contextOf('list', requestWith('', 'application/json')),
        );
      }
      expect(reads.mock.calls.length - before).toBe(1);
    } finally {
      reads.mockRestore();
    }
  });

  it('answers 400 for a body that is no JSON object, again on the same route', async () => {
    for (let i = 0; i < 2; i += 1) {
      await expect(guarded('create', '[1]')).rejects.toThrow(
        new BadRequestException(
          'request body must be a JSON object, got an array',
        ),
      );
    }
  });
});
