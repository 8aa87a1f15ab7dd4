import type { LoggerService } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { randomUUID } from 'node:crypto';
import pino, { type Logger as Pino } from 'pino';
import { TOKEN_ANYWHERE } from '../../auth/token-format';
import type { AppConfig } from '../../config/app.config';

const REQUEST_ID_FORMAT = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The path and the names of the query parameters, never their values, which may hold a token
 * (`?access_token=...`) or anything else a client should not find in our logs.
 */
export function loggableTarget(originalUrl: string): {
  path: string;
  query?: string[];
} {
  const mark = originalUrl.indexOf('?');
  const rawPath = mark === -1 ? originalUrl : originalUrl.slice(0, mark);
  const path = rawPath.includes('pst_')
    ? rawPath.replace(TOKEN_ANYWHERE, 'pst_[redacted]')
    : rawPath;
  if (mark === -1) return { path };
  const names = new Set<string>();
  for (const name of new URLSearchParams(originalUrl.slice(mark + 1)).keys()) {
    names.add(name.replace(TOKEN_ANYWHERE, 'pst_[redacted]'));
  }
  return { path, query: [...names] };
}

/** Requests carry the id their log lines are tagged with. */
export interface RequestWithId extends Request {
  id?: string;
}

/**
 * Structured JSON logs (pino). Nothing here ever logs headers or query values, so tokens never
 * reach them (docs/decisions.md, "Authentication").
 */
export function createRootLogger(config: AppConfig): Pino {
  return pino(
    { level: config.logLevel },
    // buffered: one write(2) per 4 KiB of lines, not one per request
    pino.destination({ sync: false, minLength: 4096 }),
  );
}

/**
 * One access-log line per request with its request id: the caller's X-Request-Id when it is
 * sane, a fresh UUID otherwise, echoed back in the answer. Written by hand rather than with
 * pino-http or nestjs-pino, whose child logger per request and AsyncLocalStorage weighed more
 * than the rest of a trivial request (figures in bench/README.md).
 */
export function createRequestLogger(logger: Pino) {
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
    response.once('close', () => {
      const statusCode = response.statusCode;
      // a client that hung up is its own business: no status was sent unless headers were
      const aborted = !response.writableFinished;
      const level =
        statusCode >= 500
          ? 'error'
          : statusCode >= 400 || aborted
            ? 'warn'
            : 'info';
      if (!logger.isLevelEnabled(level)) return;
      logger[level](
        {
          reqId: id,
          // behind a trusted proxy (TRUST_PROXY), the client it forwarded for
          client: request.ip,
          method: request.method,
          ...loggableTarget(request.originalUrl),
          ...(aborted && !response.headersSent ? {} : { statusCode }),
          responseTime: Math.round(performance.now() - started),
          ...(aborted ? { aborted: true } : {}),
        },
        aborted ? 'request aborted by the client' : 'request completed',
      );
    });
    next();
  };
}

/** Nest's own messages (startup, lifecycle, errors) as pino lines. */
export class PinoNestLogger implements LoggerService {
  constructor(private readonly logger: Pino) {}

  log(message: unknown, context?: string) {
    this.write('info', message, context);
  }

  error(message: unknown, stackOrContext?: string, context?: string) {
    this.write('error', message, context ?? stackOrContext);
  }

  warn(message: unknown, context?: string) {
    this.write('warn', message, context);
  }

  debug(message: unknown, context?: string) {
    this.write('debug', message, context);
  }

  verbose(message: unknown, context?: string) {
    this.write('trace', message, context);
  }

  fatal(message: unknown, context?: string) {
    this.write('fatal', message, context);
  }

  private write(
    level: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace',
    message: unknown,
    context?: string,
  ) {
    if (message instanceof Error) {
      this.logger[level]({ context, err: message }, message.message);
    } else if (typeof message === 'object' && message !== null) {
      this.logger[level]({ context, ...message });
    } else {
      this.logger[level]({ context }, String(message));
    }
  }
}
