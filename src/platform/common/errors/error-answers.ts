import { HttpException, HttpStatus } from '@nestjs/common';
import {
  DatabaseUnreachableError,
  describeRequestProblem,
  isDatabaseBusy,
  isDatabaseUnavailable,
  isSchemaMismatch,
} from '../../database/database-errors';
import type { ErrorBody } from './error-body.dto';
import { HttpErrorWithHeaders } from './http-error-with-headers';

/** What a failure is answered: the Error object, and the headers that go with it. */
export interface ErrorAnswer {
  body: ErrorBody;
  headers: Readonly<Record<string, string>>;
}

/** Methods that change something: the ones whose outcome a lost database leaves unknown. */
const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The answer to a failure, whatever layer it came from: the one mapping of exceptions to the
 * spec's Error object. AllExceptionsFilter answers with it; IdempotencyRunner records it as
 * the answer a repeat of the request gets.
 */
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
