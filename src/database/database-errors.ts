interface DriverError {
  code?: unknown;
}

function driverCodeOf(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { driverError, code } = error as {
    driverError?: DriverError;
    code?: unknown;
  };
  const value = driverError?.code ?? code;
  return typeof value === 'string' ? value : undefined;
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
  const code = driverCodeOf(error);
  if (code !== undefined && UNAVAILABLE_SQLITE_CODES.test(code)) return true;
  return (
    error instanceof TypeError &&
    error.message === 'The database connection is not open'
  );
}
