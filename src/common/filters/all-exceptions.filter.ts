import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  Logger,
} from '@nestjs/common';
import type { Response } from 'express';
import {
  describeRequestProblem,
  isDatabaseUnavailable,
} from '../../database/database-errors';
import { DatabaseAvailability } from '../../database/database-availability';
import { HttpErrorWithHeaders } from '../errors/http-error-with-headers';
import type { RequestWithId } from '../../logging/pino-logger';
import type { ErrorBody } from '../errors/error-body.dto';

export interface ErrorAnswer {
  body: ErrorBody;
  headers: Readonly<Record<string, string>>;
}

/**
 * The one place where failures become answers: every exception of every layer (routing,
 * guards, pipes, handlers, middleware) is answered with the spec's Error object.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger(AllExceptionsFilter.name);

  constructor(private readonly database: DatabaseAvailability) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const response = http.getResponse<Response>();
    const { body, headers } = toErrorAnswer(exception);
    // a 5xx the service chose (shutting down, not ready) is logged by whoever chose it, once;
    // a database away, once per outage; only the unexpected, per request, with its stack
    if (body.error >= 500 && !(exception instanceof HttpException)) {
      if (isDatabaseUnavailable(exception)) {
        this.database.wentAway(exception);
      } else {
        const { id } = http.getRequest<RequestWithId>();
        this.logger.error(
          { reqId: id, err: exception },
          `request ${id} failed with ${body.error}`,
        );
      }
    }
    if (response.headersSent) {
      response.destroy();
      return;
    }
    response.status(body.error).set(headers).json(body);
  }
}

export function toErrorAnswer(exception: unknown): ErrorAnswer {
  if (exception instanceof HttpException) {
    return {
      body: { error: exception.getStatus(), message: messageOf(exception) },
      headers:
        exception instanceof HttpErrorWithHeaders ? exception.headers : {},
    };
  }
  const requestProblem = describeRequestProblem(exception);
  if (requestProblem !== undefined) {
    return answer(HttpStatus.BAD_REQUEST, requestProblem);
  }
  if (isDatabaseUnavailable(exception)) {
    return answer(HttpStatus.SERVICE_UNAVAILABLE, DATABASE_UNAVAILABLE_MESSAGE);
  }
  return answer(HttpStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR_MESSAGE);
}

/** What a client is told when the database is away (503), and of any other fault (500). */
export const DATABASE_UNAVAILABLE_MESSAGE =
  'the database is unavailable; try again later';
export const INTERNAL_ERROR_MESSAGE = 'internal server error';

function answer(status: number, message: string): ErrorAnswer {
  return { body: { error: status, message }, headers: {} };
}

function messageOf(exception: HttpException): string {
  const response = exception.getResponse();
  if (typeof response === 'string') return response;
  const { message } = response as { message?: unknown };
  if (typeof message === 'string') return message;
  if (Array.isArray(message)) return message.join('; ');
  return exception.message;
}
