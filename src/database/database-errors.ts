import {
  CannotExecuteNotConnectedError,
  ConnectionIsNotSetError,
  QueryFailedError,
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

/** Errors that say the database cannot serve right now, not that the request or the code is wrong. */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (
    error instanceof ConnectionIsNotSetError ||
    error instanceof CannotExecuteNotConnectedError
  ) {
    return true;
  }
  const code = driverCodeOf(error);
  if (code !== undefined) return UNAVAILABLE_SQLITE_CODES.test(code);
  const cause = driverErrorOf(error);
  // better-sqlite3 after the connection was closed; its native TypeError may come from another
  // realm than ours (jest), so the message is compared, not the class
  return (
    (cause as Error | undefined)?.message ===
    'The database connection is not open'
  );
}
