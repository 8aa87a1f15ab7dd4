import type { LoggerService } from '@nestjs/common';
import pino, { type Logger as Pino } from 'pino';
import pinoHttp, { type HttpLogger } from 'pino-http';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AppConfig } from '../../config/app.config';

const REQUEST_ID_FORMAT = /^[A-Za-z0-9._:-]{1,128}$/;

/** A caller's X-Request-Id when it is sane, a fresh UUID otherwise; echoed back to the caller. */
function requestIdOf(request: IncomingMessage, response: ServerResponse) {
  const given = request.headers['x-request-id'];
  const id =
    typeof given === 'string' && REQUEST_ID_FORMAT.test(given)
      ? given
      : randomUUID();
  response.setHeader('X-Request-Id', id);
  return id;
}

/** Structured JSON logs (pino); tokens never reach them (D9). */
export function createRootLogger(config: AppConfig): Pino {
  return pino(
    {
      level: config.logLevel,
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie'],
        censor: '[redacted]',
      },
    },
    // buffered: one write(2) per 4 KiB of lines, not one per request
    pino.destination({ sync: false, minLength: 4096 }),
  );
}

/**
 * One log line per request, with its request id, as express middleware. Unlike nestjs-pino it
 * keeps no AsyncLocalStorage: promise hooks on every request halved the throughput of a
 * trivial route (bench/README.md). Code that handles a request logs through `request.log`.
 */
export function createRequestLogger(logger: Pino): HttpLogger {
  return pinoHttp({
    logger,
    genReqId: requestIdOf,
    customLogLevel: (_request, response, error) =>
      error || response.statusCode >= 500
        ? 'error'
        : response.statusCode >= 400
          ? 'warn'
          : 'info',
  });
}

/** Nest's own messages (startup, lifecycle, errors outside requests) as pino lines. */
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
