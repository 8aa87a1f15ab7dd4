import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Params } from 'nestjs-pino';
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

/** Structured JSON logs with a request id; tokens never reach them (D9). */
export function createLoggerOptions(config: AppConfig): Params {
  return {
    pinoHttp: {
      level: config.logLevel,
      genReqId: requestIdOf,
      redact: {
        paths: ['req.headers.authorization', 'req.headers.cookie'],
        censor: '[redacted]',
      },
      customLogLevel: (_request, response, error) =>
        error || response.statusCode >= 500
          ? 'error'
          : response.statusCode >= 400
            ? 'warn'
            : 'info',
    },
  };
}
