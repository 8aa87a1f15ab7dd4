import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import type { DataSourceOptions } from 'typeorm';
import { ApiToken } from '../auth/api-token.entity';
import type {
  DatabaseConfig,
  PostgresConfig,
  SqliteConfig,
} from '../config/database.config';
import { Plant } from '../plants/plant.entity';
import { WebhookDelivery } from '../webhooks/webhook-delivery.entity';
import { WebhookSubscription } from '../webhooks/webhook-subscription.entity';
import { postgresMigrations, sqliteMigrations } from './migrations';

export const entities = [Plant, ApiToken, WebhookSubscription, WebhookDelivery];

function sqliteOptions(config: SqliteConfig): DataSourceOptions {
  return {
    type: 'better-sqlite3',
    database: config.sqlitePath,
    entities,
    migrations: sqliteMigrations,
    migrationsRun: true,
    synchronize: false,
    enableWAL: true,
    prepareDatabase: (db: Database.Database) => {
      // ids are int64: read every integer as a bigint, never through a JS number
      db.defaultSafeIntegers(true);
      // with WAL, NORMAL survives a process crash (D8); FULL also a power loss
      db.pragma(`synchronous = ${config.synchronous.toUpperCase()}`);
    },
  };
}

function postgresOptions(config: PostgresConfig): DataSourceOptions {
  return {
    type: 'postgres',
    url: config.url,
    entities,
    migrations: postgresMigrations,
    migrationsRun: true,
    synchronize: false,
    poolSize: config.poolSize,
    connectTimeoutMS: 5000,
    extra: {
      statement_timeout: config.statementTimeoutMs,
      // a dead server must not hold requests until the OS gives up on the socket
      keepAlive: true,
    },
  };
}

/** Options shared by the service, its command-line tool and the TypeORM CLI (ormconfig.ts). */
export function createDataSourceOptions(
  config: DatabaseConfig,
): DataSourceOptions {
  return config.engine === 'sqlite'
    ? sqliteOptions(config)
    : postgresOptions(config);
}

/**
 * The SQLite file and its folder, created readable by the service's user only when missing.
 * SQLite gives its -wal and -shm files the database file's permissions.
 */
export function ensureDatabaseFolder(config: DatabaseConfig): void {
  if (config.engine !== 'sqlite' || config.sqlitePath === ':memory:') return;
  mkdirSync(dirname(config.sqlitePath), { recursive: true, mode: 0o700 });
  closeSync(openSync(config.sqlitePath, 'a', 0o600));
}
