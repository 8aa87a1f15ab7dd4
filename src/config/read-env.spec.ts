import { readAppConfig } from './app.config';
import { readDatabaseConfig } from './database.config';
import {
  ConfigError,
  parseDuration,
  readBoolean,
  readByteSize,
  readChoice,
  readDuration,
  readHttpUrl,
  readInteger,
  readString,
} from './read-env';

describe('readAppConfig', () => {
  it('has the documented defaults', () => {
    expect(readAppConfig({})).toEqual({
      port: 3000,
      host: '0.0.0.0',
      publicBaseUrl: undefined,
      trustProxy: false,
      logLevel: 'info',
      bodyLimitBytes: 16384,
      pageMaxBytes: 1048576,
      corsOrigins: [],
      requestTimeoutMs: 30_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 5_000,
      maxConnectionsPerAddress: 256,
      shutdownGracePeriodMs: 10_000,
      shutdownDelayMs: 0,
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

  it.each([
    ['false', false],
    ['true', true],
    ['2', 2],
    ['loopback', ['loopback']],
    [
      '10.0.0.0/8, 192.168.1.7,fd00::/8, uniquelocal',
      ['10.0.0.0/8', '192.168.1.7', 'fd00::/8', 'uniquelocal'],
    ],
  ])('reads TRUST_PROXY=%s as express does', (raw, expected) => {
    expect(readAppConfig({ TRUST_PROXY: raw }).trustProxy).toEqual(expected);
  });

  it.each([
    'yes',
    '10.0.0.0/33',
    'fd00::/129',
    '10.0.0.0/8/8',
    'loopback,proxy.internal',
    '256',
    '0x7f.1',
    '-1',
  ])('refuses TRUST_PROXY=%s, naming the forms it takes', (raw) => {
    expect(() => readAppConfig({ TRUST_PROXY: raw })).toThrow(
      /^TRUST_PROXY must be false, true, a hop count up to 255, or a comma-separated list of addresses and CIDRs/,
    );
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
        DB_CONNECT_TIMEOUT: '3s',
      }),
    ).toEqual({
      engine: 'postgres',
      url,
      poolSize: 20,
      statementTimeoutMs: 2000,
      connectTimeoutMs: 3000,
      queryTimeoutMs: 3000,
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

describe('the variable readers', () => {
  it('readInteger: the fallback when unset or empty, the bounds inclusive, digits only', () => {
    expect(readInteger({}, 'N', 7, 1, 10)).toBe(7);
    expect(readInteger({ N: '' }, 'N', 7, 1, 10)).toBe(7);
    expect(readInteger({ N: '1' }, 'N', 7, 1, 10)).toBe(1);
    expect(readInteger({ N: '10' }, 'N', 7, 1, 10)).toBe(10);
    for (const raw of ['0', '11', '-1', '1.0', ' 5', '5 ', '5x', 'x5', '1e1']) {
      expect(() => readInteger({ N: raw }, 'N', 7, 1, 10)).toThrow(
        `N must be an integer between 1 and 10, got ${JSON.stringify(raw)}`,
      );
    }
  });

  it('readChoice: one of the choices exactly', () => {
    expect(readChoice({}, 'C', 'a', ['a', 'b'])).toBe('a');
    expect(readChoice({ C: '' }, 'C', 'a', ['a', 'b'])).toBe('a');
    expect(readChoice({ C: 'b' }, 'C', 'a', ['a', 'b'])).toBe('b');
    expect(() => readChoice({ C: 'B' }, 'C', 'a', ['a', 'b'])).toThrow(
      'C must be one of a, b, got "B"',
    );
  });

  it('readString: the value, or the fallback when unset or empty', () => {
    expect(readString({}, 'S', 'f')).toBe('f');
    expect(readString({ S: '' }, 'S', 'f')).toBe('f');
    expect(readString({ S: ' v ' }, 'S', 'f')).toBe(' v ');
  });

  it('readHttpUrl: absolute http or https only, trailing slashes dropped, undefined when unset', () => {
    expect(readHttpUrl({}, 'U')).toBeUndefined();
    expect(readHttpUrl({ U: '' }, 'U')).toBeUndefined();
    expect(readHttpUrl({ U: 'https://a.example//' }, 'U')).toBe(
      'https://a.example',
    );
    for (const raw of ['ftp://a.example', 'a.example', '/path']) {
      expect(() => readHttpUrl({ U: raw }, 'U')).toThrow(
        `U must be an absolute http or https URL, got ${JSON.stringify(raw)}`,
      );
    }
  });

  it('readByteSize: a whole pattern of digits and a unit, within 1 byte and the maximum', () => {
    const max = 2 * 1024 ** 2;
    expect(readByteSize({}, 'B', 99, max)).toBe(99);
    expect(readByteSize({ B: '' }, 'B', 99, max)).toBe(99);
    expect(readByteSize({ B: '1' }, 'B', 99, max)).toBe(1);
    expect(readByteSize({ B: '10b' }, 'B', 99, max)).toBe(10);
    expect(readByteSize({ B: '16 kb' }, 'B', 99, max)).toBe(16384);
    expect(readByteSize({ B: ' 2MB ' }, 'B', 99, max)).toBe(max);
    for (const raw of [
      '0',
      '0kb',
      '3mb',
      'x16kb',
      '16kbx',
      '16gb',
      'kb',
      '1.5kb',
      '-1',
    ]) {
      expect(() => readByteSize({ B: raw }, 'B', 99, max)).toThrow(
        `B must be a size between 1 byte and 2mb such as 16kb, got ${JSON.stringify(raw)}`,
      );
    }
  });

  it('parseDuration: a whole pattern of digits and a unit, positive and safe', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('10s')).toBe(10_000);
    expect(parseDuration('5m')).toBe(300_000);
    expect(parseDuration('24h')).toBe(86_400_000);
    expect(parseDuration(' 2d ')).toBe(172_800_000);
    for (const text of [
      '0s',
      '10',
      's',
      'x10s',
      '10sx',
      '10 s',
      '1.5s',
      '-1s',
      '10S',
      '99999999999999d',
    ]) {
      expect([text, parseDuration(text)]).toEqual([text, undefined]);
    }
  });

  it('readDuration: the fallback when unset or empty, one line naming the variable otherwise', () => {
    expect(readDuration({}, 'D', 42)).toBe(42);
    expect(readDuration({ D: '' }, 'D', 42)).toBe(42);
    expect(readDuration({ D: '3s' }, 'D', 42)).toBe(3000);
    expect(() => readDuration({ D: '3' }, 'D', 42)).toThrow(
      'D must be a positive duration such as 500ms, 10s, 5m, 24h or 2d, got "3"',
    );
  });

  it('readBoolean: "true" and "false" only, and "false" is false', () => {
    expect(readBoolean({}, 'F', true)).toBe(true);
    expect(readBoolean({ F: '' }, 'F', true)).toBe(true);
    expect(readBoolean({ F: 'false' }, 'F', true)).toBe(false);
    expect(readBoolean({ F: 'true' }, 'F', false)).toBe(true);
    for (const raw of ['1', '0', 'TRUE', 'yes', ' true']) {
      expect(() => readBoolean({ F: raw }, 'F', false)).toThrow(
        `F must be true or false, got ${JSON.stringify(raw)}`,
      );
    }
  });
});
