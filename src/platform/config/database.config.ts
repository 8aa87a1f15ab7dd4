import { resolve } from 'node:path';
import { registerAs } from '@nestjs/config';
import { ConfigError, parseEnvironment } from './environment';
import { DEFAULT_DATABASE_URL } from './environment-schema';
import { withoutPassword } from './url-without-password';

export { DEFAULT_DATABASE_URL };

export interface SqliteConfig {
  engine: 'sqlite';
  /** A file path, or `:memory:`. */
  sqlitePath: string;
  /**
   * SQLite's `synchronous` pragma under WAL: `normal` survives a crash of the process, `full`
   * also a power loss, at the price of an fsync per commit.
   */
  synchronous: 'normal' | 'full';
}

export interface PostgresConfig {
  engine: 'postgres';
  /** `postgres://` or `postgresql://`, `?sslmode=` included; the pg driver reads it whole. */
  url: string;
  poolSize: number;
  /** The server cancels a statement that runs longer (`statement_timeout`). */
  statementTimeoutMs: number;
  /**
   * Opening a connection that takes longer fails: the server is unreachable. With the query
   * timeout below, a partitioned server costs a request a bounded wait and a 503, never a hang.
   */
  connectTimeoutMs: number;
  /**
   * How long work waits its turn (a free pooled connection, a transaction's retries after
   * conflicts) before it is answered 503 busy, with nothing changed.
   */
  busyTimeoutMs: number;
  /** Work waiting for a pooled connection at most: the length of the line. */
  queueLimit: number;
  /** Statements with parameters run as named statements (named-statements.ts). */
  preparedStatements: boolean;
  /**
   * The client gives up on a query whose answer has not come by then, for when the server
   * cannot even cancel it (a partition): the statement timeout plus a second, so a server
   * that can answer always does so first.
   */
  queryTimeoutMs: number;
}

export type DatabaseConfig = SqliteConfig | PostgresConfig;

const SSL_MODES = [
  'disable',
  'allow',
  'prefer',
  'require',
  'verify-ca',
  'verify-full',
];

function readPostgresUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ConfigError(
      `DATABASE_URL must be postgres://user:password@host:port/database, got an unparseable URL`,
    );
  }
  const sslMode = parsed.searchParams.get('sslmode');
  if (!parsed.hostname || parsed.pathname.length < 2) {
    throw new ConfigError(
      'DATABASE_URL must name a host and a database: postgres://user:password@host:port/database',
    );
  }
  if (sslMode !== null && !SSL_MODES.includes(sslMode)) {
    throw new ConfigError(
      `DATABASE_URL's sslmode must be one of ${SSL_MODES.join(', ')}, got ${JSON.stringify(sslMode)}`,
    );
  }
  return url;
}

export function readDatabaseConfig(env: NodeJS.ProcessEnv): DatabaseConfig {
  const read = parseEnvironment(env);
  const url = read.DATABASE_URL;
  if (/^postgres(ql)?:\/\//.test(url)) {
    return {
      engine: 'postgres',
      url: readPostgresUrl(url),
      poolSize: read.DB_POOL_SIZE,
      statementTimeoutMs: read.DB_STATEMENT_TIMEOUT,
      connectTimeoutMs: read.DB_CONNECT_TIMEOUT,
      busyTimeoutMs: read.DB_BUSY_TIMEOUT,
      queueLimit: read.DB_QUEUE_LIMIT,
      preparedStatements: read.DB_PREPARED_STATEMENTS,
      queryTimeoutMs: read.DB_STATEMENT_TIMEOUT + 1000,
    };
  }
  return {
    engine: 'sqlite',
    sqlitePath: url.slice('sqlite:'.length),
    synchronous: read.DB_SYNCHRONOUS,
  };
}

/** The database in use, for people: SQLite's absolute path, or the URL with its password hidden. */
export function describeDatabase(config: DatabaseConfig): string {
  if (config.engine === 'sqlite') {
    return config.sqlitePath === ':memory:'
      ? 'SQLite in memory'
      : `SQLite ${resolve(config.sqlitePath)}`;
  }
  return `PostgreSQL ${withoutPassword(config.url)}`;
}

export const databaseConfig = registerAs('database', () =>
  readDatabaseConfig(process.env),
);
