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
      corsOrigins: [],
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5_000,
      shutdownGracePeriodMs: 10_000,
      rateLimit: {
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
    ).toEqual({ sqlitePath: ':memory:', synchronous: 'full' });
  });

  it('rejects other engines for now, naming the variable', () => {
    expect(() =>
      readDatabaseConfig({ DATABASE_URL: 'postgres://x/y' }),
    ).toThrow(/^DATABASE_URL must be/);
  });
});
