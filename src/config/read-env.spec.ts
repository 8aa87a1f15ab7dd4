import { readAppConfig } from './app.config';
import { readDatabaseConfig } from './database.config';
import { ConfigError } from './read-env';

describe('readAppConfig', () => {
  it('has the documented defaults', () => {
    expect(readAppConfig({})).toEqual({
      port: 3000,
      host: '0.0.0.0',
      publicBaseUrl: 'http://localhost:3000',
      logLevel: 'info',
      bodyLimitBytes: 16384,
      pageMaxBytes: 1048576,
      corsOrigins: [],
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5_000,
      maxConnectionsPerAddress: 256,
      shutdownGracePeriodMs: 10_000,
      rateLimit: {
        redisUrl: undefined,
        redisKeyPrefix: 'plant-store:',
        redisTimeoutMs: 500,
        windowMs: 60_000,
        perToken: 6000,
        perAddress: 600,
        badTokens: 20,
        badTokenBlockMs: 900_000,
      },
    });
  });

  it('reads sizes as express writes them', () => {
    expect(readAppConfig({ BODY_LIMIT: '1mb' }).bodyLimitBytes).toBe(1048576);
    expect(readAppConfig({ BODY_LIMIT: '512' }).bodyLimitBytes).toBe(512);
    expect(readAppConfig({ BODY_LIMIT: '32KB' }).bodyLimitBytes).toBe(32768);
  });

  it('reads a CORS allowlist of origins', () => {
    expect(
      readAppConfig({
        CORS_ORIGINS: 'https://app.example.com, http://localhost:5173',
      }).corsOrigins,
    ).toEqual(['https://app.example.com', 'http://localhost:5173']);
  });

  it('drops a trailing slash from PUBLIC_BASE_URL', () => {
    expect(
      readAppConfig({ PUBLIC_BASE_URL: 'https://plants.example/' })
        .publicBaseUrl,
    ).toBe('https://plants.example');
  });

  it.each([
    [{ PORT: '-1' }, 'PORT'],
    [{ PORT: '3000.5' }, 'PORT'],
    [{ LOG_LEVEL: 'verbose' }, 'LOG_LEVEL'],
    [{ BODY_LIMIT: '1gb' }, 'BODY_LIMIT'],
    [{ PUBLIC_BASE_URL: 'localhost:3000' }, 'PUBLIC_BASE_URL'],
    [{ CORS_ORIGINS: 'https://app.example.com/path' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: '*' }, 'CORS_ORIGINS'],
    [{ SHUTDOWN_GRACE_PERIOD: '0s' }, 'SHUTDOWN_GRACE_PERIOD'],
    [{ REQUEST_TIMEOUT: '30' }, 'REQUEST_TIMEOUT'],
  ])('names the variable in its error for %j', (env, name) => {
    expect(() => readAppConfig(env)).toThrow(ConfigError);
    expect(() => readAppConfig(env)).toThrow(new RegExp(`^${name} must be`));
  });
});

describe('readDatabaseConfig', () => {
  it('defaults to data/plant-store.sqlite', () => {
    expect(readDatabaseConfig({})).toEqual({
      engine: 'sqlite',
      sqlitePath: 'data/plant-store.sqlite',
      synchronous: 'normal',
    });
  });

  it('reads sqlite::memory:', () => {
    expect(
      readDatabaseConfig({
        DATABASE_URL: 'sqlite::memory:',
        DB_SYNCHRONOUS: 'full',
      }),
    ).toEqual({
      engine: 'sqlite',
      sqlitePath: ':memory:',
      synchronous: 'full',
    });
  });

  it.each([
    'postgres://plants:secret@db.internal:5432/plants',
    'postgresql://plants@127.0.0.1/plants?sslmode=require',
  ])('reads the PostgreSQL URL %s with its pool settings', (url) => {
    expect(
      readDatabaseConfig({
        DATABASE_URL: url,
        DB_POOL_SIZE: '20',
        DB_STATEMENT_TIMEOUT: '2s',
      }),
    ).toEqual({
      engine: 'postgres',
      url,
      poolSize: 20,
      statementTimeoutMs: 2000,
    });
  });

  it.each([
    [
      'mysql://x/y',
      /^DATABASE_URL must be sqlite:<path>, sqlite::memory: or postgres:/,
    ],
    ['postgres://host-only', /^DATABASE_URL must name a host and a database/],
    [
      'postgres://h/db?sslmode=sometimes',
      /^DATABASE_URL's sslmode must be one of/,
    ],
  ])('rejects %s, naming the variable', (url, message) => {
    expect(() => readDatabaseConfig({ DATABASE_URL: url })).toThrow(message);
  });
});
