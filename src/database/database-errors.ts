import {
  CannotExecuteNotConnectedError,
  ConnectionIsNotSetError,
  QueryFailedError,
  TypeORMError,
} from 'typeorm';

/** TypeORM wraps the driver's own error; the driver's code and message are what tell. */
function driverErrorOf(error: unknown): unknown {
  return error instanceof QueryFailedError ? error.driverError : error;
}

function driverCodeOf(error: unknown): string | undefined {
  const cause = driverErrorOf(error);
  const code =
    typeof cause === 'object' && cause !== null
      ? (cause as { code?: unknown }).code
      : undefined;
  return typeof code === 'string' ? code : undefined;
}

/** PostgreSQL text cannot hold U+0000 (SQLSTATE 22021); SQLite can. */
export function isUnstorableText(error: unknown): boolean {
  return driverCodeOf(error) === '22021';
}

export function isUniqueViolation(error: unknown): boolean {
  const code = driverCodeOf(error);
  return (
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === '23505'
  );
}

const UNAVAILABLE_SQLITE_CODES =
  /^SQLITE_(BUSY|LOCKED|FULL|IOERR|READONLY|CANTOPEN|NOMEM|PROTOCOL)(_|$)/;

/**
 * PostgreSQL SQLSTATEs and socket errors that mean the server is away, overloaded or shutting
 * down: connection exceptions (08), insufficient resources (53), operator intervention (57,
 * which includes statement_timeout's 57014), read-only transactions (25006).
 */
const UNAVAILABLE_POSTGRES_CODES =
  /^(08...|53...|57...|25006|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN)$/;

/** pg's own words when a pooled connection dies or none can be had in time. */
const UNAVAILABLE_POSTGRES_MESSAGES =
  /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed|Cannot use a pool after calling end/;

/** Errors that say the database cannot serve right now, not that the request or the code is wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (
    error instanceof ConnectionIsNotSetError ||
    error instanceof CannotExecuteNotConnectedError ||
    // TypeORM's postgres driver, once its pool has been closed
    (error instanceof TypeORMError && error.message === 'Driver not Connected')
  ) {
    return true;
  }
  const code = driverCodeOf(error);
  if (code !== undefined) {
    return (
      UNAVAILABLE_SQLITE_CODES.test(code) ||
      UNAVAILABLE_POSTGRES_CODES.test(code)
    );
  }
  const cause = driverErrorOf(error);
  if (
    UNAVAILABLE_POSTGRES_MESSAGES.test(
      (cause as Error | undefined)?.message ?? '',
    )
  ) {
    return true;
  }
  // better-sqlite3 after the connection was closed; its native TypeError may come from another
  // realm than ours (jest), so the message is compared, not the class
  return (
    (cause as Error | undefined)?.message ===
    'The database connection is not open'
  );
}
