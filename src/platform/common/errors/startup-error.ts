/**
 * Something the operator must fix before the service (or its CLI) can start: a bad setting, a
 * port in use, a database that cannot be opened. Its message is one line saying what is wrong
 * and how to fix it, logged alone, without a stack trace.
 */
export class StartupError extends Error {
  override readonly name: string = 'StartupError';
}
