import {
  CannotExecuteNotConnectedError,
  ConnectionIsNotSetError,
  QueryFailedError,
  TypeORMError,
} from 'typeorm';
import { StartupError } from '../common/errors/startup-error';
import { isStalePlan } from './named-statements';

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

/**
 * PostgreSQL text cannot hold U+0000 (SQLSTATE 22021), neither to store nor to compare; SQLite
 * can. This is the one place that knows it: every such failure is the request's (400).
 */
export function isUnstorableText(error: unknown): boolean {
  return driverCodeOf(error) === '22021';
}

/**
 * PostgreSQL gave up a transaction so that the others stay consistent: a serialization failure
 * (40001) or a deadlock (40P01); or a statement of it was prepared before a newer release's
 * migration changed its result's columns (named-statements.ts, which renames it). Nothing of
 * it was applied; running it again may succeed.
 */
export function isTransactionConflict(error: unknown): boolean {
  const code = driverCodeOf(error);
  return (
    code === '40001' || code === '40P01' || isStalePlan(driverErrorOf(error))
  );
}

/**
 * PostgreSQL's division_by_zero (22012): how a transaction's closing UPDATE says it changed no
 * row, by dividing by its count of changed rows (TransactionRunner's commit).
 */
export function isDivisionByZero(error: unknown): boolean {
  return driverCodeOf(error) === '22012';
}

/** A statement that waited for a lock longer than lock_timeout (55P03): nothing of it was applied. */
export function isLockNotGranted(error: unknown): boolean {
  return driverCodeOf(error) === '55P03';
}

/**
 * A statement that waited for a lock longer than lock_timeout (55P03), or a transaction given
 * up in a deadlock or a serialization failure: nothing of it was applied. What a migration
 * meets when live traffic holds the locks it needs, and retries.
 */
export function gaveWayToLiveTraffic(error: unknown): boolean {
  return isLockNotGranted(error) || isTransactionConflict(error);
}

/**
 * A statement named a table or column the database does not have: code running on a schema
 * that another release migrated past it (PostgreSQL's undefined_table 42P01 and
 * undefined_column 42703; SQLite's words for the same). SchemaCompatibilityService says which.
 */
export function isSchemaMismatch(error: unknown): boolean {
  const code = driverCodeOf(error);
  if (code === '42703' || code === '42P01') return true;
  return (
    code === 'SQLITE_ERROR' &&
    /no such (column|table)|has no column named/.test(
      (driverErrorOf(error) as Error).message,
    )
  );
}

export function isUniqueViolation(error: unknown): boolean {
  const code = driverCodeOf(error);
  return (
    code === 'SQLITE_CONSTRAINT_PRIMARYKEY' ||
    code === 'SQLITE_CONSTRAINT_UNIQUE' ||
    code === '23505'
  );
}

/**
 * The columns of the unique key a failed write collided with, as each engine names them
 * (`UNIQUE constraint failed: plants.id`, `Key (id)=(42) already exists.`); undefined when
 * the error is not a unique violation.
 */
export function uniqueKeyColumnsOf(error: unknown): string[] | undefined {
  if (!isUniqueViolation(error)) return undefined;
  const cause = driverErrorOf(error) as { message?: string; detail?: string };
  const sqlite = /constraint failed: (.+)$/.exec(cause.message ?? '');
  if (sqlite) {
    return sqlite[1].split(', ').map((column) => column.replace(/^.*\./, ''));
  }
  const postgres = /^Key \((.+?)\)=/.exec(cause.detail ?? '');
  return postgres
    ? postgres[1].split(', ').map((column) => column.replace(/"/g, ''))
    : [];
}

/**
 * A write that would have taken a unique key another row holds; the request's fault. Its
 * module words it for its resource ("a plant with id 42 already exists"); unworded, the
 * exception filter answers 400 with this message, which names the key.
 */
export class DuplicateKeyError extends Error {
  override readonly name = 'DuplicateKeyError';

  constructor(
    /** The entity's class: `Plant`. */
    readonly entityName: string,
    readonly key: [column: string, value: unknown][],
    cause: unknown,
  ) {
    const described = key
      .map(([column, value]) => `${column} ${String(value)}`)
      .join(' and ');
    super(`a record with ${described} already exists`, { cause });
  }
}

/**
 * A rule the schema holds, broken by the change: a CHECK constraint, a foreign key, or a
 * trigger that refuses on purpose (SQLite's `RAISE(ABORT, 'message')`, PL/pgSQL's
 * `RAISE EXCEPTION 'message'`). The trigger's own words are the message.
 */
function describeRefusedChange(error: unknown): string | undefined {
  const code = driverCodeOf(error);
  if (code === undefined) return undefined;
  const cause = driverErrorOf(error) as {
    message?: string;
    constraint?: string;
    detail?: string;
  };
  const message = cause.message ?? '';
  switch (code) {
    case 'SQLITE_CONSTRAINT_TRIGGER':
    case 'P0001':
      return message;
    case 'SQLITE_CONSTRAINT_CHECK':
    case '23514': {
      const name =
        cause.constraint ?? /CHECK constraint failed: (.+)$/.exec(message)?.[1];
      return `the change breaks the rule ${name ? `"${name}"` : 'of a CHECK constraint'}`;
    }
    case 'SQLITE_CONSTRAINT_FOREIGNKEY':
    case '23503': {
      const missing =
        /^Key \((.+?)\)=\((.*)\) is not present in table "(.+)"/.exec(
          cause.detail ?? '',
        );
      const referenced =
        /^Key \((.+?)\)=\((.*)\) is still referenced from table "(.+)"/.exec(
          cause.detail ?? '',
        );
      if (missing)
        return `${missing[1]} ${missing[2]} refers to no row of ${missing[3]}`;
      if (referenced) {
        return `${referenced[1]} ${referenced[2]} is still referred to from ${referenced[3]}`;
      }
      return 'the change refers to a record that does not exist, or removes one that others refer to';
    }
    default:
      return undefined;
  }
}

/**
 * What a database error says about the request that caused it, when it is the request's
 * fault: the one place that maps them to 400, so that no module turns a duplicate key, a
 * rule of the schema, or a text PostgreSQL cannot hold into a 500 (docs/decisions.md,
 * "Status codes").
 */
export function describeRequestProblem(error: unknown): string | undefined {
  if (error instanceof DuplicateKeyError) return error.message;
  const refused = describeRefusedChange(error);
  if (refused !== undefined) return refused;
  const columns = uniqueKeyColumnsOf(error);
  if (columns) {
    return columns.length > 0
      ? `a record with this ${columns.join(' and ')} already exists`
      : 'a record with the same key already exists';
  }
  if (isUnstorableText(error)) {
    return 'text values must not contain the character U+0000, which the PostgreSQL database of this service cannot hold';
  }
  return undefined;
}

/**
 * The database answered, but the work could not have its turn in time: no connection of the
 * pool came free, or a transaction kept conflicting, within `DB_BUSY_TIMEOUT` (docs/decisions.md,
 * "Contention"). Nothing of the work was applied; running it again later may succeed.
 */
export class DatabaseBusyError extends Error {
  override readonly name = 'DatabaseBusyError';
}

/**
 * Answers of a database that is there but contended: another SQLite connection (the CLI) holds
 * its lock (SQLITE_BUSY, SQLITE_LOCKED); a PostgreSQL transaction that still conflicted after
 * every retry (serialization failure 40001, deadlock 40P01), a lock not granted in time
 * (55P03) or a statement the server cancelled at `statement_timeout` (57014). Each undid
 * everything of its transaction.
 */
const BUSY_CODES = /^(SQLITE_(BUSY|LOCKED)(_.*)?|40001|40P01|55P03|57014)$/;

/**
 * pg-pool's words for a wait for a free pooled connection that ran out: the queue in front of
 * the pool (connection-queue.ts) keeps that wait out of pg-pool, but a caller that went around
 * it meets the same condition.
 */
const POOL_WAIT_TIMEOUT = 'timeout exceeded when trying to connect';

/**
 * The database is there but busy: this work did not have its turn within the bound, and
 * nothing of it was applied (503 with Retry-After). Not an outage: readiness and the outage
 * lines are about the database, not the queue in front of it.
 */
export function isDatabaseBusy(error: unknown): boolean {
  if (error instanceof DatabaseBusyError) return true;
  const code = driverCodeOf(error);
  if (code !== undefined) return BUSY_CODES.test(code);
  return (
    (driverErrorOf(error) as Error | undefined)?.message === POOL_WAIT_TIMEOUT
  );
}

/**
 * No connection could be had: the server refused one, or did not let one be opened in time,
 * while this work waited its turn or tried to begin. Nothing of the work reached it, so
 * nothing of it was applied; but the database is away, which is an outage.
 */
export class DatabaseUnreachableError extends Error {
  override readonly name = 'DatabaseUnreachableError';
}

const UNAVAILABLE_SQLITE_CODES =
  /^SQLITE_(FULL|IOERR|READONLY|CANTOPEN|NOMEM|PROTOCOL)(_|$)/;

/**
 * PostgreSQL SQLSTATEs and socket errors that mean the server is away, overloaded or shutting
 * down: connection exceptions (08), insufficient resources (53), operator intervention (57)
 * but a statement cancelled at its timeout (57014, busy), and read-only transactions (25006).
 */
const UNAVAILABLE_POSTGRES_CODES =
  /^(08...|53...|57(?!014)...|25006|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|ENOTFOUND|EAI_AGAIN)$/;

/**
 * pg's own words when a pooled connection dies, a new one cannot be made in time, or a
 * query's answer does not come within the query timeout.
 */
const UNAVAILABLE_POSTGRES_MESSAGES =
  /Connection terminated|Query read timeout|Client has encountered a connection error|Connection closed|Cannot use a pool after calling end/;

/**
 * Errors that say the database cannot serve right now, not that the request or the code is
 * wrong, nor that it is only busy (isDatabaseBusy).
 */
export function isDatabaseUnavailable(error: unknown): boolean {
  if (
    error instanceof DatabaseUnreachableError ||
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

/**
 * The database answers but takes no writes: a full disk (SQLITE_FULL, PostgreSQL's disk_full
 * 53100) or a read-only file or server (SQLITE_READONLY, 25006). Reads are still served, so
 * such an outage ends with a write that succeeds, not with the next read.
 */
export function isWriteRefused(error: unknown): boolean {
  const code = driverCodeOf(error);
  return (
    code !== undefined &&
    (/^(SQLITE_(FULL|READONLY)(_.*)?|53100|25006)$/.test(code) ||
      // a move's fence on SQLite, which has no read-only error a trigger can raise
      (code === 'SQLITE_CONSTRAINT_TRIGGER' &&
        String((driverErrorOf(error) as Error).message).startsWith(
          FENCED_WRITE_MESSAGE,
        )))
  );
}

/**
 * What a write fails with once a move has fenced the database with triggers (a write of an
 * instance that has not looked yet, or of another release): the same 503 as a refused write.
 */
export const FENCED_WRITE_MESSAGE =
  'the plant store has moved to another database';

/** Connection failures the operator fixes in DATABASE_URL or on the server, by their code. */
const CONNECT_FAILURES: Record<
  string,
  (where: {
    host: string;
    port: string;
    server: string;
    database: string;
    user: string;
  }) => string
> = {
  // SQLSTATE invalid_catalog_name
  '3D000': ({ host, port, server, database, user }) =>
    `PostgreSQL at ${server} has no database "${database}": create it (createdb -h ${host} -p ${port} -U ${user} ${database}), or name another in DATABASE_URL`,
  // invalid_password, invalid_authorization_specification (no such role, pg_hba.conf)
  '28P01': ({ server, user }) =>
    `PostgreSQL at ${server} refused the password of user "${user}": check the user and password in DATABASE_URL`,
  '28000': ({ server, user }) =>
    `PostgreSQL at ${server} refused user "${user}": check the user in DATABASE_URL, and that pg_hba.conf lets it in from here`,
  ECONNREFUSED: ({ server }) =>
    `nothing answers at ${server}, where DATABASE_URL says PostgreSQL is: start it, or fix the host and port`,
  ENOTFOUND: ({ server }) =>
    `the host of DATABASE_URL (${server}) does not resolve: fix the host name`,
  // node-postgres's words, without a code, when sslmode asks for TLS and the server has none
  'The server does not support SSL connections': ({ server }) =>
    `PostgreSQL at ${server} does not accept TLS, which DATABASE_URL asks for (sslmode): turn ssl on in the server's postgresql.conf, or take sslmode out of DATABASE_URL where the network between them is trusted`,
  SELF_SIGNED_CERT_IN_CHAIN: ({ server }) =>
    `PostgreSQL at ${server} presents a certificate that no authority this process trusts signed: give Node.js the server's CA (NODE_EXTRA_CA_CERTS=<its PEM file>), or use sslmode=no-verify where the network is trusted`,
  DEPTH_ZERO_SELF_SIGNED_CERT: ({ server }) =>
    `PostgreSQL at ${server} presents a self-signed certificate: give Node.js that certificate as a CA (NODE_EXTRA_CA_CERTS=<its PEM file>), or use sslmode=no-verify where the network is trusted`,
};

/**
 * A failure to connect to PostgreSQL at start, as one line naming the server, database and
 * user (never the password) and what to fix; undefined for any other failure.
 */
export function explainConnectFailure(
  error: unknown,
  url: string,
): StartupError | undefined {
  const key =
    driverCodeOf(error) ?? (driverErrorOf(error) as Error | undefined)?.message;
  const explain = key === undefined ? undefined : CONNECT_FAILURES[key];
  if (!explain) return undefined;
  const parsed = new URL(url);
  const port = parsed.port || '5432';
  return new StartupError(
    explain({
      host: parsed.hostname,
      port,
      server: `${parsed.hostname}:${port}`,
      database: decodeURIComponent(parsed.pathname.slice(1)),
      // pg's own default when the URL names no user
      user: decodeURIComponent(parsed.username) || (process.env.USER ?? ''),
    }),
    { cause: error },
  );
}
