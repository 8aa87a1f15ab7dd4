import { registerAs } from '@nestjs/config';
import { ConfigError, readString } from './read-env';

export interface DatabaseConfig {
  /** A file path, or `:memory:`. */
  sqlitePath: string;
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
  return { sqlitePath: match[1] };
}

export const databaseConfig = registerAs('database', () =>
  readDatabaseConfig(process.env),
);
