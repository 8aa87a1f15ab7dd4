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
  statementTimeoutMs: number;
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
    return {
      engine: 'postgres',
      url: readPostgresUrl(url),
      poolSize: readInteger(env, 'DB_POOL_SIZE', 10, 1, 1000),
      statementTimeoutMs: readDuration(env, 'DB_STATEMENT_TIMEOUT', 5000),
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
