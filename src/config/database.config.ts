import { registerAs } from '@nestjs/config';
import {
  ConfigError,
  readChoice,
  readDuration,
  readInteger,
  readString,
} from './read-env';

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
   * A connection attempt, or a wait for a free pooled connection, that takes longer fails.
   * With the query timeout below, a partitioned server costs a request a bounded wait and a
   * 503, never a hang.
   */
  connectTimeoutMs: number;
  /**
   * The client gives up on a query whose answer has not come by then, for when the server
   * cannot even cancel it (a partition): the statement timeout plus a second, so a server
   * that can answer always does so first.
   */
  queryTimeoutMs: number;
}

export type DatabaseConfig = SqliteConfig | PostgresConfig;

export const DEFAULT_DATABASE_URL = 'sqlite:data/plant-store.sqlite';

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
  const url = readString(env, 'DATABASE_URL', DEFAULT_DATABASE_URL);
  if (/^postgres(ql)?:\/\//.test(url)) {
    const statementTimeoutMs = readDuration(env, 'DB_STATEMENT_TIMEOUT', 5000);
    return {
      engine: 'postgres',
      url: readPostgresUrl(url),
      poolSize: readInteger(env, 'DB_POOL_SIZE', 10, 1, 1000),
      statementTimeoutMs,
      connectTimeoutMs: readDuration(env, 'DB_CONNECT_TIMEOUT', 5000),
      queryTimeoutMs: statementTimeoutMs + 1000,
    };
  }
  const match = /^sqlite:(.+)$/.exec(url);
  if (!match) {
    throw new ConfigError(
      'DATABASE_URL must be sqlite:<path>, sqlite::memory: or postgres://user:password@host:port/database',
    );
  }
  return {
    engine: 'sqlite',
    sqlitePath: match[1],
    synchronous: readChoice(env, 'DB_SYNCHRONOUS', 'normal', [
      'normal',
      'full',
    ]),
  };
}

export const databaseConfig = registerAs('database', () =>
  readDatabaseConfig(process.env),
);
