import type { LoggerService } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import pino, { type Logger as Pino } from 'pino';
import { TOKEN_ANYWHERE } from '../http/token-format';
import type { AppConfig } from '../config/app.config';
import { tracing } from '../tracing/tracing';

const REQUEST_ID_FORMAT = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * What one access-log line may hold of a request's target, whoever sends it: a line costs
 * about as much for a 429 or a rejected token as for a 200, so no client can fill the logs
 * faster than it is served (each character of a control code weighs six once escaped).
 */
export const LOGGED_PATH_CHARS = 256;
export const LOGGED_QUERY_NAMES = 16;
export const LOGGED_QUERY_NAME_CHARS = 64;

/** `text` up to `max` characters, with how many more there were. */
function capped(text: string, max: number): string {
  return text.length <= max
    ? text
    : `${text.slice(0, max)}…[${text.length - max} more]`;
}

/** A token in the text, percent-encoded or not, as `pst_[redacted]`. */
function redacted(text: string): string {
  let plain = text;
  if (text.includes('%')) {
    try {
      plain = decodeURIComponent(text);
    } catch {
      // not valid percent-encoding: no encoded token either
    }
  }
  return plain.includes('pst_')
    ? plain.replace(TOKEN_ANYWHERE, 'pst_[redacted]')
    : text;
}

/**
 * The path and the names of the query parameters, never their values, which may hold a token
 * (`?access_token=...`) or anything else a client should not find in our logs; each capped.
 */
export function loggableTarget(originalUrl: string): {
  path: string;
  query?: string[];
} {
  const mark = originalUrl.indexOf('?');
  const rawPath = mark === -1 ? originalUrl : originalUrl.slice(0, mark);
  const path = capped(redacted(rawPath), LOGGED_PATH_CHARS);
  if (mark === -1) return { path };
  const names = new Set<string>();
  let more = 0;
  for (const name of new URLSearchParams(originalUrl.slice(mark + 1)).keys()) {
    const logged = capped(
      name
        .replace(TOKEN_ANYWHERE, 'pst_[redacted]')
        // six bytes each once JSON escapes them; a replacement character weighs three
        .replace(/\p{Cc}/gu, '\uFFFD'),
      LOGGED_QUERY_NAME_CHARS,
    );
    if (names.has(logged)) continue;
    if (names.size < LOGGED_QUERY_NAMES) names.add(logged);
    else more += 1;
  }
  return { path, query: more ? [...names, `…[${more} more]`] : [...names] };
}

/** Requests carry the id their log lines are tagged with. */
export interface RequestWithId extends Request {
  id?: string;
  /** Who its token speaks for, once proven (BearerGuard's `admit`): the access log names it. */
  bearer?: { caller: string } | null;
}

/**
 * Structured JSON logs (pino). Nothing here ever logs headers or query values, so tokens never
 * reach them (docs/decisions.md, "Authentication").
 */
export function createRootLogger(config: AppConfig): Pino {
  // buffered: one write(2) per 4 KiB of lines, not one per request, but never held longer
  // than LOG_FLUSH_INTERVAL_MS, so that a quiet service's lines still show up at once
  const destination = pino.destination({
    sync: false,
    minLength: 4096,
    periodicFlush: LOG_FLUSH_INTERVAL_MS,
  });
  bufferedDestinations.add(destination);
  return pino(rootLoggerOptions(config), destination);
}

/** The root logger's options: with tracing on, every line inside a span names it. */
export function rootLoggerOptions(config: AppConfig): pino.LoggerOptions {
  const activeIds = tracing.activeIds;
  return {
    level: config.logLevel,
    ...(activeIds && { mixin: () => activeIds() ?? {} }),
  };
}

/** The longest a log line waits in the buffer. */
export const LOG_FLUSH_INTERVAL_MS = 250;

/** Written out before a boot failure's last line, so that it comes last. */
const bufferedDestinations = new Set<ReturnType<typeof pino.destination>>();

/**
 * One access-log line per request with its request id: the caller's X-Request-Id when it is
 * sane, a fresh UUID otherwise, echoed back in the answer. Written by hand rather than with
 * pino-http or nestjs-pino, whose child logger per request and AsyncLocalStorage weighed more
 * than the rest of a trivial request (figures in bench/README.md).
 */
export function createRequestLogger(
  logger: Pino,
  /** Paths an orchestrator probes every few seconds: their successes are logged at debug. */
  probePaths: ReadonlySet<string> = new Set(),
) {
  // the connections that already have their aborted line
  const cutConnections = new WeakSet<object>();
  return function logRequest(
    request: RequestWithId,
    response: Response,
    next: NextFunction,
  ): void {
    const given = request.headers['x-request-id'];
    const id =
      typeof given === 'string' && REQUEST_ID_FORMAT.test(given)
        ? given
        : randomUUID();
    request.id = id;
    response.setHeader('X-Request-Id', id);
    const started = performance.now();
    // the request's span, taken now: the line is written once it has ended
    const traceIds = tracing.activeIds?.();
    response.once('close', () => {
      const statusCode = response.statusCode;
      // a client that hung up is its own business: no status was sent unless headers were
      const aborted = !response.writableFinished;
      // A hang-up aborts every request pipelined on the connection, thousands from one
      // packet: the first is news, at warn, the others at debug like a probe.
      const connection = request.socket as object | undefined;
      const alsoCut = aborted && !!connection && cutConnections.has(connection);
      if (aborted && connection) cutConnections.add(connection);
      // 503 is the service saying it cannot serve now (shutting down, a dependency away),
      // logged once as such; only other 5xx are errors. A 4xx is the client's doing, and
      // routine (a 401, a 429): info, as a 200. A probe that succeeds is no news: debug.
      const level = alsoCut
        ? 'debug'
        : statusCode >= 500 && statusCode !== 503
          ? 'error'
          : aborted || statusCode === 503
            ? 'warn'
            : isProbe(request, probePaths)
              ? statusCode >= 400
                ? 'warn'
                : 'debug'
              : 'info';
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          reqId: id,
          // behind a trusted proxy (TRUST_PROXY), the client it forwarded for
          client: request.ip,
          // who, never the token itself: `token:<id>`, or an access token's subject
          ...(request.bearer ? { caller: request.bearer.caller } : {}),
          method: request.method,
          ...loggableTarget(request.originalUrl),
          ...(aborted && !response.headersSent ? {} : { statusCode }),
          responseTime: Math.round(performance.now() - started),
          ...(aborted ? { aborted: true } : {}),
          ...traceIds,
        },
        aborted ? 'request aborted by the client' : 'request completed',
      );
    });
    next();
  };
}

function isProbe(request: Request, probePaths: ReadonlySet<string>): boolean {
  if (request.method !== 'GET' && request.method !== 'HEAD') return false;
  const mark = request.originalUrl.indexOf('?');
  return probePaths.has(
    mark === -1 ? request.originalUrl : request.originalUrl.slice(0, mark),
  );
}

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';

/**
 * Nest's boot chatter (a line per module and route) is debug: at info the service says one
 * line when it is up (main.ts). Their errors at boot are reported by the boot failure line,
 * which names what to fix, so they go to debug too rather than print it twice.
 */
const NEST_BOOT_CONTEXTS = new Set([
  'NestFactory',
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestApplication',
  'ExceptionHandler',
]);

/** A stack trace, as Nest passes one after the message of `error()`. */
const STACK_FORMAT = /\n\s+at /;

/**
 * Nest's own messages (startup, lifecycle, errors) and every `Logger` of the service, as pino
 * lines with their words in `msg`. Nest calls `level(message, ...params, context)`: the last
 * parameter is the logger's context, a string before it is either a stack (error) or, when
 * the message is an object of fields, the words that go with them.
 */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Pino) {}

  log(message: unknown, ...params: unknown[]) {
    this.write('info', message, params);
  }

  error(message: unknown, ...params: unknown[]) {
    this.write('error', message, params);
  }

  warn(message: unknown, ...params: unknown[]) {
    this.write('warn', message, params);
  }

  debug(message: unknown, ...params: unknown[]) {
    this.write('debug', message, params);
  }

  verbose(message: unknown, ...params: unknown[]) {
    this.write('trace', message, params);
  }

  fatal(message: unknown, ...params: unknown[]) {
    this.write('fatal', message, params);
  }

  private write(given: Level, message: unknown, params: unknown[]) {
    const strings = params.filter(
      (param): param is string => typeof param === 'string',
    );
    const context = strings.length > 0 ? strings.pop() : undefined;
    const level =
      context !== undefined && NEST_BOOT_CONTEXTS.has(context)
        ? 'debug'
        : given;
    if (!this.logger.isLevelEnabled(level)) return;
    const stack = strings.find((text) => STACK_FORMAT.test(text));
    const words = strings.find((text) => !STACK_FORMAT.test(text));
    if (message instanceof Error) {
      this.logger[level]({ context, err: message }, words ?? message.message);
    } else if (typeof message === 'object' && message !== null) {
      const { msg, ...fields } = message as Record<string, unknown>;
      this.logger[level](
        { context, ...fields, ...(stack && { stack }) },
        words ?? (typeof msg === 'string' ? msg : ''),
      );
    } else {
      this.logger[level]({ context, ...(stack && { stack }) }, String(message));
    }
  }
}

/** Writes out what the buffered destinations hold: before the process exits. */
export function flushLogs(): void {
  for (const destination of bufferedDestinations) {
    try {
      destination.flushSync();
    } catch {
      // not open yet, so nothing was written to it; or its reader is gone (EPIPE), so
      // nothing can be (sonic-boom 5 says so, where 4 tried again every 100 ms for good)
    }
  }
}

/**
 * The last words of a process that could not start, as one JSON line written before it exits:
 * a bad setting's message alone, anything else with its error.
 */
export function logBootFailure(error: unknown, expected: boolean): void {
  flushLogs();
  const logger = pino({}, pino.destination({ sync: true }));
  if (expected || !(error instanceof Error)) {
    // a line for each problem (every bad setting, say)
    const message = error instanceof Error ? error.message : String(error);
    for (const line of message.split('\n')) {
      logger.fatal(`the service could not start: ${line}`);
    }
  } else {
    logger.fatal(
      { err: error },
      `the service could not start: ${error.message}`,
    );
  }
}

/**
 * Node's own warnings (deprecations, listener leaks) as JSON lines through `logger`, in place of
 * the plain text Node writes to stderr: every line of the service's output is JSON.
 */
export function logProcessWarnings(
  logger: { warn(message: unknown, ...params: unknown[]): void },
  emitter: NodeJS.EventEmitter = process,
): void {
  emitter.removeAllListeners('warning');
  emitter.on('warning', (warning: Error & { code?: string }) =>
    logger.warn({
      msg: warning.message,
      warning: warning.name,
      ...(warning.code && { code: warning.code }),
    }),
  );
}
