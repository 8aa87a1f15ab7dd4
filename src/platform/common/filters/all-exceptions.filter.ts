import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  HttpStatus,
  Logger,
  Optional,
} from '@nestjs/common';
import type { Response } from 'express';
import {
  DatabaseUnreachableError,
  describeRequestProblem,
  isDatabaseBusy,
  isDatabaseUnavailable,
  isSchemaMismatch,
} from '../../database/database-errors';
import { DatabaseAvailabilityService } from '../../database/database-availability.service';
import { SchemaCompatibilityService } from '../../database/schema-compatibility.service';
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

  constructor(
    private readonly database: DatabaseAvailabilityService,
    @Optional() private readonly schema?: SchemaCompatibilityService,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const response = http.getResponse<Response>();
    const { body, headers } = toErrorAnswer(
      exception,
      http.getRequest<RequestWithId>().method,
    );
    // a 5xx the service chose (shutting down, not ready) is logged by whoever chose it, once;
    // a database away, once per outage; a busy one is no outage (the access log has each
    // 503); only the unexpected, per request, with its stack
    if (
      body.error >= 500 &&
      !(exception instanceof HttpException) &&
      !isDatabaseBusy(exception)
    ) {
      if (isDatabaseUnavailable(exception)) {
        this.database.wentAway(exception);
      } else if (isSchemaMismatch(exception)) {
        // logged once, by the look at the schema this asks readiness to take
        this.schema?.suspect();
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

/** Methods that change something: the ones whose outcome a lost database leaves unknown. */
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export function toErrorAnswer(exception: unknown, method = 'GET'): ErrorAnswer {
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
  if (isDatabaseBusy(exception)) {
    return {
      body: { error: HttpStatus.SERVICE_UNAVAILABLE, message: BUSY_MESSAGE },
      headers: { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) },
    };
  }
  if (isDatabaseUnavailable(exception)) {
    return answer(
      HttpStatus.SERVICE_UNAVAILABLE,
      !WRITES.has(method)
        ? DATABASE_UNAVAILABLE_MESSAGE
        : exception instanceof DatabaseUnreachableError
          ? UNREACHABLE_BEFORE_CHANGE_MESSAGE
          : WRITE_OUTCOME_UNKNOWN_MESSAGE,
    );
  }
  if (isSchemaMismatch(exception)) {
    return answer(HttpStatus.SERVICE_UNAVAILABLE, SCHEMA_MISMATCH_MESSAGE);
  }
  return answer(HttpStatus.INTERNAL_SERVER_ERROR, INTERNAL_ERROR_MESSAGE);
}

/**
 * This instance's code met a schema that another release migrated past it (docs/operations.md,
 * "Upgrades"): its readiness says so from now on, so that traffic goes to instances that fit.
 */
export const SCHEMA_MISMATCH_MESSAGE =
  "this instance's code does not fit the database's schema, which another release migrated: nothing was changed by this statement; try again, and an instance whose code fits will serve it";

/** What a client is told when the database is away (503), and of any other fault (500). */
export const DATABASE_UNAVAILABLE_MESSAGE =
  'the database is unavailable; try again later';
export const INTERNAL_ERROR_MESSAGE = 'internal server error';
/**
 * A write cut off from the database may have been committed before the connection was lost:
 * the client must look before it sends it again (docs/decisions.md, "Status codes").
 */
export const WRITE_OUTCOME_UNKNOWN_MESSAGE =
  'the database did not answer: the change may or may not have been made; read it back before you try again';

/**
 * A write that could not even begin: no connection to the database could be had, so none of
 * its statements ran.
 */
export const UNREACHABLE_BEFORE_CHANGE_MESSAGE =
  'the database is unavailable: nothing was changed; try again later';

/**
 * A busy database: the work waited its turn (a connection, a contended row) for the whole
 * contention bound and was not done; nothing was changed, so sending it again is safe
 * (docs/decisions.md, "Contention").
 */
export const BUSY_MESSAGE =
  'the database is too busy to serve this request now: nothing was changed; try again after Retry-After seconds';
export const BUSY_RETRY_AFTER_SECONDS = 1;

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
