import { Logger } from '@nestjs/common';
import type { Response } from 'express';
import { EventEmitter } from 'node:events';
import pino from 'pino';
import type { AppConfig } from '../config/app.config';
import { tracing } from '../tracing/tracing';
import {
  createRequestLogger,
  createRootLogger,
  logBootFailure,
  logProcessWarnings,
  loggableTarget,
  PinoNestLogger,
  rootLoggerOptions,
  type RequestWithId,
} from './pino-logger';

describe('loggableTarget', () => {
  const token = `pst_${'A'.repeat(43)}`;

  it('keeps the path and the names of the query parameters, never their values', () => {
    expect(loggableTarget(`/plants?access_token=${token}&limit=5`)).toEqual({
      path: '/plants',
      query: ['access_token', 'limit'],
    });
    expect(loggableTarget('/plants?a=1&a=2&b')).toEqual({
      path: '/plants',
      query: ['a', 'b'],
    });
    expect(loggableTarget('/plants?')).toEqual({ path: '/plants', query: [] });
    expect(loggableTarget('/plants')).toEqual({ path: '/plants' });
  });

  it('caps the path, each parameter name and their number, saying how much was left out', () => {
    const { path, query } = loggableTarget(
      `/${'p'.repeat(10_000)}?${Array.from({ length: 500 }, (_, i) => `${String(i).padStart(3, '0')}${'n'.repeat(97)}=1`).join('&')}`,
    );
    expect(path).toBe(`/${'p'.repeat(255)}…[9745 more]`);
    expect(query).toHaveLength(17);
    expect(query![0]).toBe(`000${'n'.repeat(61)}…[36 more]`);
    expect(query![16]).toBe('…[484 more]');
    expect(
      loggableTarget(
        `/plants?${Array.from({ length: 40 }, (_, i) => `q${i}=1`).join('&')}`,
      ).query,
    ).toEqual([...Array.from({ length: 16 }, (_, i) => `q${i}`), '…[24 more]']);
  });

  it('writes control characters of a parameter name as replacement characters', () => {
    expect(loggableTarget('/plants?a%01b%1B%7F=1').query).toEqual([
      'a\uFFFDb\uFFFD\uFFFD',
    ]);
  });

  it('hides a percent-encoded token in the path too', () => {
    expect(loggableTarget(`/plants/${token.replace('_', '%5F')}`)).toEqual({
      path: '/plants/pst_[redacted]',
    });
    expect(loggableTarget('/plants/%E0%A4%A')).toEqual({
      path: '/plants/%E0%A4%A',
    });
  });

  it('hides anything shaped like a token in the path or a parameter name', () => {
    expect(loggableTarget(`/plants/${token}?${token}=1`)).toEqual({
      path: '/plants/pst_[redacted]',
      query: ['pst_[redacted]'],
    });
    expect(loggableTarget('/plants/pst_short')).toEqual({
      path: '/plants/pst_short',
    });
  });
});

/** A pino logger whose lines are kept, parsed, instead of written. */
function collectingLogger(level: string) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level },
    {
      write: (line: string) =>
        lines.push(JSON.parse(line) as Record<string, unknown>),
    },
  );
  return { logger, lines };
}

class FakeResponse extends EventEmitter {
  statusCode = 200;
  writableFinished = true;
  headersSent = true;
  readonly headers: Record<string, string> = {};
  setHeader(name: string, value: string) {
    this.headers[name] = value;
  }
}

describe('createRequestLogger', () => {
  function logOne(
    level: string,
    request: {
      url?: string;
      headers?: Record<string, string>;
      bearer?: { caller: string };
    },
    finish: (response: FakeResponse) => void,
  ) {
    const { logger, lines } = collectingLogger(level);
    const response = new FakeResponse();
    const req = {
      method: 'GET',
      originalUrl: request.url ?? '/plants',
      headers: request.headers ?? {},
      bearer: request.bearer,
    } as unknown as RequestWithId;
    const next = jest.fn();
    createRequestLogger(logger)(req, response as unknown as Response, next);
    expect(next).toHaveBeenCalledTimes(1);
    finish(response);
    response.emit('close');
    return { lines, response, req };
  }

  it('echoes a sane X-Request-Id and logs it with the path, the query names and the status', () => {
    const { lines, response, req } = logOne(
      'info',
      {
        url: '/plants?limit=5&access_token=secret',
        headers: { 'x-request-id': 'abc-1.2_3:4' },
      },
      () => undefined,
    );
    expect(req.id).toBe('abc-1.2_3:4');
    expect(response.headers['X-Request-Id']).toBe('abc-1.2_3:4');
    expect(lines).toEqual([
      expect.objectContaining({
        level: 30,
        reqId: 'abc-1.2_3:4',
        method: 'GET',
        path: '/plants',
        query: ['limit', 'access_token'],
        statusCode: 200,
        responseTime: expect.any(Number),
        msg: 'request completed',
      }),
    ]);
    expect(JSON.stringify(lines)).not.toContain('secret');
  });

  it('names the caller of a proven token, and nothing of a request without one', () => {
    const { lines } = logOne(
      'info',
      { url: '/plants', headers: {}, bearer: { caller: 'token:7f3c' } },
      () => undefined,
    );
    expect(lines).toEqual([expect.objectContaining({ caller: 'token:7f3c' })]);
    const anonymous = logOne(
      'info',
      { url: '/plants', headers: {} },
      () => undefined,
    );
    expect(anonymous.lines[0]).not.toHaveProperty('caller');
  });

  it("names the request's trace and span when tracing is on, taken as it starts", () => {
    let active: { trace_id: string; span_id: string } | undefined = {
      trace_id: 'a'.repeat(32),
      span_id: 'b'.repeat(16),
    };
    tracing.activeIds = () => active;
    try {
      const { lines } = logOne('info', {}, () => {
        // the span has ended by the time the line is written
        active = undefined;
      });
      expect(lines[0]).toMatchObject({
        trace_id: 'a'.repeat(32),
        span_id: 'b'.repeat(16),
      });
    } finally {
      delete tracing.activeIds;
    }
    const { lines } = logOne('info', {}, () => undefined);
    expect(lines[0]).not.toHaveProperty('trace_id');
  });

  it.each(['', 'has space', 'x'.repeat(129), 'semi;colon'])(
    'replaces the X-Request-Id %j with a fresh UUID',
    (given) => {
      const { req } = logOne(
        'info',
        { headers: { 'x-request-id': given } },
        () => undefined,
      );
      expect(req.id).toMatch(
        /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$/,
      );
    },
  );

  it('keeps an X-Request-Id of 128 characters', () => {
    const id = 'x'.repeat(128);
    const { req } = logOne(
      'info',
      { headers: { 'x-request-id': id } },
      () => undefined,
    );
    expect(req.id).toBe(id);
  });

  it.each([
    [200, 30],
    [399, 30],
    // the client's doing, and routine: as a 200
    [400, 30],
    [404, 30],
    [429, 30],
    [499, 30],
    [500, 50],
    // the service saying it cannot serve now; the condition itself is logged once
    [503, 40],
  ])('logs a %i at level %i', (status, level) => {
    const { lines } = logOne('info', {}, (response) => {
      response.statusCode = status;
    });
    expect(lines).toEqual([
      expect.objectContaining({ level, statusCode: status }),
    ]);
  });

  it.each([
    ['/health/live', 200, 20],
    ['/health/ready', 200, 20],
    ['/health/ready', 503, 40],
    ['/plants', 200, 30],
  ])('logs a probe of %s answering %i at level %i', (path, status, level) => {
    const { logger, lines } = collectingLogger('debug');
    const response = new FakeResponse();
    createRequestLogger(logger, new Set(['/health/live', '/health/ready']))(
      {
        method: 'GET',
        originalUrl: path,
        headers: {},
      } as unknown as RequestWithId,
      response as unknown as Response,
      jest.fn(),
    );
    response.statusCode = status;
    response.emit('close');
    expect(lines).toEqual([
      expect.objectContaining({ level, statusCode: status }),
    ]);
  });

  it('logs a request the client cut before any answer as aborted, at warn, with no status', () => {
    const { lines } = logOne('info', {}, (response) => {
      response.writableFinished = false;
      response.headersSent = false;
    });
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        aborted: true,
        msg: 'request aborted by the client',
      }),
    ]);
    expect(lines[0]).not.toHaveProperty('statusCode');
  });

  it('keeps the status of an answer cut after its headers were sent', () => {
    const { lines } = logOne('info', {}, (response) => {
      response.writableFinished = false;
      response.statusCode = 200;
    });
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, aborted: true, statusCode: 200 }),
    ]);
  });

  it('writes nothing below the configured level', () => {
    expect(logOne('error', {}, () => undefined).lines).toEqual([]);
    expect(
      logOne('error', {}, (response) => {
        response.statusCode = 404;
      }).lines,
    ).toEqual([]);
  });
});

describe('rootLoggerOptions', () => {
  it('adds the active span to every line while tracing is on, and nothing while it is off', () => {
    const config = { logLevel: 'info' } as AppConfig;
    expect(rootLoggerOptions(config)).toEqual({ level: 'info' });
    let active: { trace_id: string; span_id: string } | undefined;
    tracing.activeIds = () => active;
    try {
      const lines: Record<string, unknown>[] = [];
      const logger = pino(rootLoggerOptions(config), {
        write: (line: string) =>
          lines.push(JSON.parse(line) as Record<string, unknown>),
      });
      logger.info('outside');
      active = { trace_id: 'c'.repeat(32), span_id: 'd'.repeat(16) };
      logger.info('inside');
      expect(lines.map(({ msg, trace_id }) => [msg, trace_id])).toEqual([
        ['outside', undefined],
        ['inside', 'c'.repeat(32)],
      ]);
      expect(lines[1].span_id).toBe('d'.repeat(16));
    } finally {
      delete tracing.activeIds;
    }
  });
});

describe('logProcessWarnings', () => {
  it("replaces Node's own printing of warnings with a line through the logger", () => {
    const emitter = new EventEmitter();
    const nodePrinting = jest.fn();
    emitter.on('warning', nodePrinting);
    const warn = jest.fn();
    logProcessWarnings({ warn }, emitter);
    emitter.emit(
      'warning',
      Object.assign(new Error('an old API'), {
        name: 'DeprecationWarning',
        code: 'DEP0999',
      }),
    );
    emitter.emit(
      'warning',
      Object.assign(new Error('too many listeners'), {
        name: 'MaxListenersExceededWarning',
      }),
    );
    expect(nodePrinting).not.toHaveBeenCalled();
    expect(warn.mock.calls).toEqual([
      [{ msg: 'an old API', warning: 'DeprecationWarning', code: 'DEP0999' }],
      [{ msg: 'too many listeners', warning: 'MaxListenersExceededWarning' }],
    ]);
  });
});

describe('logBootFailure', () => {
  function capture(): { lines: Record<string, unknown>[]; flushed: string[] } {
    const lines: Record<string, unknown>[] = [];
    const flushed: string[] = [];
    jest.spyOn(pino, 'destination').mockImplementation(
      (options) =>
        ({
          write: (line: string) => {
            lines.push(JSON.parse(line) as Record<string, unknown>);
            flushed.push('line');
            return true;
          },
          flushSync: () => {
            flushed.push(
              (options as { sync?: boolean } | undefined)?.sync
                ? 'sync'
                : 'buffer',
            );
          },
        }) as unknown as ReturnType<typeof pino.destination>,
    );
    return { lines, flushed };
  }

  afterEach(() => jest.restoreAllMocks());

  it('writes a bad setting as one fatal line with its message alone, after what was buffered', () => {
    const { lines, flushed } = capture();
    createRootLogger({ logLevel: 'info' } as AppConfig);
    logBootFailure(new Error('PORT must be an integer'), true);
    // what the service had buffered is written out before the last line
    expect(flushed.slice(0, 2)).toEqual(['buffer', 'line']);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 60,
        msg: 'the service could not start: PORT must be an integer',
      }),
    ]);
    expect(lines[0]).not.toHaveProperty('err');
  });

  it('writes any other failure with its error, and a thrown non-error as text', () => {
    const { lines } = capture();
    logBootFailure(new Error('listen EADDRINUSE'), false);
    logBootFailure('odd', false);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 60,
        msg: 'the service could not start: listen EADDRINUSE',
        err: expect.objectContaining({ message: 'listen EADDRINUSE' }),
      }),
      expect.objectContaining({
        level: 60,
        msg: 'the service could not start: odd',
      }),
    ]);
  });
});

describe('PinoNestLogger', () => {
  it.each([
    'NestFactory',
    'InstanceLoader',
    'RoutesResolver',
    'RouterExplorer',
    'NestApplication',
    'ExceptionHandler',
  ])(
    "writes Nest's boot lines from %s at debug, not info or error",
    (context) => {
      const atInfo = collectingLogger('info');
      new PinoNestLogger(atInfo.logger).log(
        'dependencies initialized',
        context,
      );
      new PinoNestLogger(atInfo.logger).error('boom', context);
      expect(atInfo.lines).toEqual([]);
      const atDebug = collectingLogger('debug');
      new PinoNestLogger(atDebug.logger).error('boom', context);
      expect(atDebug.lines).toEqual([
        expect.objectContaining({ level: 20, msg: 'boom', context }),
      ]);
    },
  );

  it.each([
    ['log', 30],
    ['warn', 40],
    ['debug', 20],
    ['verbose', 10],
    ['fatal', 60],
  ] as const)('writes %s at level %i with its context', (method, level) => {
    const { logger, lines } = collectingLogger('trace');
    new PinoNestLogger(logger)[method]('hello', 'Ctx');
    expect(lines).toEqual([
      expect.objectContaining({ level, msg: 'hello', context: 'Ctx' }),
    ]);
  });

  it('writes an error with its stack argument taken as context when no context follows', () => {
    const { logger, lines } = collectingLogger('trace');
    const nest = new PinoNestLogger(logger);
    nest.error('failed', 'Ctx');
    nest.error('failed', 'stack', 'Ctx2');
    expect(lines).toEqual([
      expect.objectContaining({ level: 50, msg: 'failed', context: 'Ctx' }),
      expect.objectContaining({ level: 50, msg: 'failed', context: 'Ctx2' }),
    ]);
  });

  it('puts the words that follow an object of fields in msg, through a Nest Logger with a context', () => {
    const { logger, lines } = collectingLogger('trace');
    Logger.overrideLogger(new PinoNestLogger(logger));
    try {
      const nest = new Logger('Ctx');
      nest.warn({ key: 'k1' }, 'the limit is near');
      nest.error({ reqId: 'r7' }, 'request r7 failed with 500');
      nest.error('failed', 'Error: x\n    at f (file.js:1:1)');
      nest.log({ msg: 'from the fields', detail: 1 });
    } finally {
      Logger.overrideLogger(false);
    }
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        key: 'k1',
        msg: 'the limit is near',
        context: 'Ctx',
      }),
      expect.objectContaining({
        level: 50,
        reqId: 'r7',
        msg: 'request r7 failed with 500',
        context: 'Ctx',
      }),
      expect.objectContaining({
        level: 50,
        msg: 'failed',
        stack: 'Error: x\n    at f (file.js:1:1)',
        context: 'Ctx',
      }),
      expect.objectContaining({
        level: 30,
        msg: 'from the fields',
        detail: 1,
        context: 'Ctx',
      }),
    ]);
  });

  it('writes an Error as err with its message, and an object as fields', () => {
    const { logger, lines } = collectingLogger('trace');
    const nest = new PinoNestLogger(logger);
    nest.warn(new Error('it broke'), 'Ctx');
    nest.log({ reqId: 'r1', detail: 2 }, 'Ctx');
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'it broke',
        context: 'Ctx',
        err: expect.objectContaining({ message: 'it broke' }),
      }),
      expect.objectContaining({
        level: 30,
        reqId: 'r1',
        detail: 2,
        context: 'Ctx',
      }),
    ]);
  });
});
