import { registerAs } from '@nestjs/config';
import { ConfigError, readChoice, readString } from './read-env';

export interface DatabaseConfig {
  /** A file path, or `:memory:`. */
  sqlitePath: string;
  /**
   * SQLite's `synchronous` pragma under WAL: `normal` survives a crash of the process, `full`
   * also a power loss, at the price of an fsync per commit.
   */
  synchronous: 'normal' | 'full';
}

export const DEFAULT_DATABASE_URL = 'sqlite:data/plant-store.sqlite';

export function readDatabaseConfig(env: NodeJS.ProcessEnv): DatabaseConfig {
  const url = readString(env, 'DATABASE_URL', DEFAULT_DATABASE_URL);
  const match = /^sqlite:(.+)$/.exec(url);
  if (!match) {
    throw new ConfigError(
      `DATABASE_URL must be sqlite:<path> or sqlite::memory:, got ${JSON.stringify(url)}`,
    );
  }
  return {
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
