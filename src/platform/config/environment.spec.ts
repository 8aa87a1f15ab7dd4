import { readAppConfig } from './app.config';
import { readDatabaseConfig } from './database.config';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseEnv } from 'node:util';
import {
  ConfigError,
  loadEnvironment,
  metaOf,
  parseEnvironment,
  unknownSettingWarnings,
} from './environment';
import { ENVIRONMENT_SCHEMA } from './environment-schema';
import { parseDuration } from './setting-kinds';
import { renderEnvExample } from './settings-docs';

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

  it(".env.example lists the service's own settings as the schema says, before the modules'", () => {
    const example = readFileSync(
      join(__dirname, '..', '..', '..', '.env.example'),
      'utf8',
    );
    // no module has declared settings in this unit test: the service's own alone
    const modules = example.indexOf('\n# --- the ');
    expect(modules).toBeGreaterThan(0);
    expect(renderEnvExample()).toBe(example.slice(0, modules));
    // and each default, as written there, is what the service runs with
    const defaults = parseEnv(
      example.slice(0, modules).replace(/^# (?=[A-Z_]+=)/gm, ''),
    );
    expect(Object.keys(defaults).sort()).toEqual(
      Object.keys(ENVIRONMENT_SCHEMA.shape).sort(),
    );
    expect(parseEnvironment(defaults)).toEqual(parseEnvironment({}));
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
        DB_BUSY_TIMEOUT: '4s',
        DB_QUEUE_LIMIT: '50',
        DB_PREPARED_STATEMENTS: 'false',
      }),
    ).toEqual({
      engine: 'postgres',
      url,
      poolSize: 20,
      statementTimeoutMs: 2000,
      connectTimeoutMs: 3000,
      busyTimeoutMs: 4000,
      queueLimit: 50,
      preparedStatements: false,
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

describe('the environment schema', () => {
  const read = (env: Record<string, string>) => parseEnvironment(env);

  it('integers: the default when unset or empty, the bounds inclusive, digits only', () => {
    expect(read({}).DB_POOL_SIZE).toBe(10);
    expect(read({ DB_POOL_SIZE: '' }).DB_POOL_SIZE).toBe(10);
    expect(read({ DB_POOL_SIZE: '1' }).DB_POOL_SIZE).toBe(1);
    expect(read({ DB_POOL_SIZE: '1000' }).DB_POOL_SIZE).toBe(1000);
    for (const raw of [
      '0',
      '1001',
      '-1',
      '1.0',
      ' 5',
      '5 ',
      '5x',
      'x5',
      '1e1',
    ]) {
      expect(() => read({ DB_POOL_SIZE: raw })).toThrow(
        new ConfigError(
          `DB_POOL_SIZE must be an integer between 1 and 1000, got ${JSON.stringify(raw)}`,
        ),
      );
    }
  });

  it('choices: one of them exactly', () => {
    expect(read({}).DB_SYNCHRONOUS).toBe('normal');
    expect(read({ DB_SYNCHRONOUS: '' }).DB_SYNCHRONOUS).toBe('normal');
    expect(read({ DB_SYNCHRONOUS: 'full' }).DB_SYNCHRONOUS).toBe('full');
    expect(() => read({ DB_SYNCHRONOUS: 'FULL' })).toThrow(
      'DB_SYNCHRONOUS must be one of normal, full, got "FULL"',
    );
  });

  it('text: the value as written, or the default when unset or empty', () => {
    expect(read({}).REDIS_KEY_PREFIX).toBe('plant-store:');
    expect(read({ REDIS_KEY_PREFIX: '' }).REDIS_KEY_PREFIX).toBe(
      'plant-store:',
    );
    expect(read({ REDIS_KEY_PREFIX: ' v ' }).REDIS_KEY_PREFIX).toBe(' v ');
  });

  it('URLs: absolute http or https only, trailing slashes dropped, undefined when unset', () => {
    expect(read({}).PUBLIC_BASE_URL).toBeUndefined();
    expect(read({ PUBLIC_BASE_URL: '' }).PUBLIC_BASE_URL).toBeUndefined();
    expect(
      read({ PUBLIC_BASE_URL: 'https://a.example//' }).PUBLIC_BASE_URL,
    ).toBe('https://a.example');
    for (const raw of ['ftp://a.example', 'a.example', '/path']) {
      expect(() => read({ PUBLIC_BASE_URL: raw })).toThrow(
        `PUBLIC_BASE_URL must be an absolute http or https URL, got ${JSON.stringify(raw)}`,
      );
    }
  });

  it('sizes: a whole pattern of digits and a unit, within 1 byte and the maximum', () => {
    expect(read({}).BODY_LIMIT).toBe(16 * 1024);
    expect(read({ BODY_LIMIT: '' }).BODY_LIMIT).toBe(16 * 1024);
    expect(read({ BODY_LIMIT: '1' }).BODY_LIMIT).toBe(1);
    expect(read({ BODY_LIMIT: '10b' }).BODY_LIMIT).toBe(10);
    expect(read({ BODY_LIMIT: '16 kb' }).BODY_LIMIT).toBe(16384);
    expect(read({ BODY_LIMIT: ' 64MB ' }).BODY_LIMIT).toBe(64 * 1024 ** 2);
    for (const raw of [
      '0',
      '0kb',
      '65mb',
      'x16kb',
      '16kbx',
      '16gb',
      'kb',
      '1.5kb',
      '-1',
    ]) {
      expect(() => read({ BODY_LIMIT: raw })).toThrow(
        `BODY_LIMIT must be a size between 1 byte and 64mb such as 16kb, got ${JSON.stringify(raw)}`,
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

  it('durations: the default when unset or empty, one line naming the variable otherwise', () => {
    expect(read({}).REDIS_TIMEOUT).toBe(500);
    expect(read({ REDIS_TIMEOUT: '' }).REDIS_TIMEOUT).toBe(500);
    expect(read({ REDIS_TIMEOUT: '3s' }).REDIS_TIMEOUT).toBe(3000);
    expect(() => read({ REDIS_TIMEOUT: '3' })).toThrow(
      'REDIS_TIMEOUT must be a positive duration such as 500ms, 10s, 5m, 24h or 2d, got "3"',
    );
    expect(() => read({ REDIS_TIMEOUT: '0s' })).toThrow(
      /^REDIS_TIMEOUT must be a positive/,
    );
  });

  it('rate-limit windows and blocks are whole seconds, which is what Redis keeps', () => {
    expect(read({}).RATE_LIMIT_WINDOW).toBe(60_000);
    expect(read({ RATE_LIMIT_WINDOW: '2000ms' }).RATE_LIMIT_WINDOW).toBe(2000);
    expect(
      read({ RATE_LIMIT_BAD_TOKEN_BLOCK: '1h' }).RATE_LIMIT_BAD_TOKEN_BLOCK,
    ).toBe(3_600_000);
    expect(() => read({ RATE_LIMIT_WINDOW: '1500ms' })).toThrow(
      'RATE_LIMIT_WINDOW must be a positive duration of whole seconds such as 30s, 5m, 24h or 2d, got "1500ms"',
    );
    expect(() => read({ RATE_LIMIT_BAD_TOKEN_BLOCK: '500ms' })).toThrow(
      /^RATE_LIMIT_BAD_TOKEN_BLOCK must be a positive duration of whole seconds/,
    );
    expect(() => read({ RATE_LIMIT_WINDOW: '0s' })).toThrow(
      /^RATE_LIMIT_WINDOW must be a positive duration of whole seconds/,
    );
  });

  it('SHUTDOWN_DELAY may be zero, written with or without a unit', () => {
    expect(read({}).SHUTDOWN_DELAY).toBe(0);
    expect(read({ SHUTDOWN_DELAY: '0ms' }).SHUTDOWN_DELAY).toBe(0);
    expect(read({ SHUTDOWN_DELAY: '5s' }).SHUTDOWN_DELAY).toBe(5000);
    expect(() => read({ SHUTDOWN_DELAY: '0' })).toThrow(
      'SHUTDOWN_DELAY must be a duration such as 500ms, 10s, 5m, 24h or 2d, got "0"',
    );
  });

  it('booleans: "true" and "false" only, and "false" is false', () => {
    expect(read({}).TRACES_BACKGROUND).toBe(false);
    expect(read({ TRACES_BACKGROUND: '' }).TRACES_BACKGROUND).toBe(false);
    expect(read({ TRACES_BACKGROUND: 'false' }).TRACES_BACKGROUND).toBe(false);
    expect(read({ TRACES_BACKGROUND: 'true' }).TRACES_BACKGROUND).toBe(true);
    for (const raw of ['1', '0', 'TRUE', 'yes', ' true']) {
      expect(() => read({ TRACES_BACKGROUND: raw })).toThrow(
        `TRACES_BACKGROUND must be true or false, got ${JSON.stringify(raw)}`,
      );
    }
  });

  it('refuses with a ConfigError, which the boot logs without a stack', () => {
    expect(() => read({ PORT: 'x' })).toThrow(
      expect.objectContaining({ name: 'ConfigError' }) as Error,
    );
  });

  it('reads SHUTDOWN_DELAY zero only as a whole zero with a unit', () => {
    expect(read({ SHUTDOWN_DELAY: ' 0s ' }).SHUTDOWN_DELAY).toBe(0);
    expect(read({ SHUTDOWN_DELAY: '10s' }).SHUTDOWN_DELAY).toBe(10_000);
    for (const raw of ['0sx', 'x0s']) {
      expect(() => read({ SHUTDOWN_DELAY: raw })).toThrow(
        /^SHUTDOWN_DELAY must be/,
      );
    }
  });

  it('reads Redis URLs with or without TLS, and nothing else', () => {
    for (const url of ['redis://cache:6379/2', 'rediss://cache']) {
      expect(read({ REDIS_URL: url }).REDIS_URL).toBe(url);
    }
    for (const url of [
      'xredis://cache',
      'redis://',
      'redis:///0',
      'http://cache',
      // a password's raw / # ? ends it early: the rest would be read as a path or a fragment
      'redis://user:pa/ss@cache:6379',
      'redis://user:pa#ss@cache:6379',
      'redis://user:pa?ss@cache:6379',
      'redis://cache:6379/0#x',
      'redis://cache:6379/zero',
    ]) {
      expect(() => read({ REDIS_URL: url })).toThrow(/^REDIS_URL must be/);
    }
  });

  it('reads a percent-encoded Redis password, and shows no part of one it refuses', () => {
    const url = 'redis://user:pa%2Fss%23w%40rd@cache:6379/1';
    expect(read({ REDIS_URL: url }).REDIS_URL).toBe(url);
    expect(() => read({ REDIS_URL: 'redis://user:p@/s#s@cache:6379' })).toThrow(
      /got "redis:\/\/\*\*\*@cache:6379"$/,
    );
  });

  it('reads http URLs as well as https', () => {
    expect(
      read({ PUBLIC_BASE_URL: 'http://plants.lan:3100' }).PUBLIC_BASE_URL,
    ).toBe('http://plants.lan:3100');
  });

  it('names the wrong origin of CORS_ORIGINS, and the forms it takes', () => {
    expect(() =>
      read({ CORS_ORIGINS: 'https://app.example.com, https://b.example/path' }),
    ).toThrow(
      'CORS_ORIGINS must be a comma-separated list of origins such as https://app.example.com, got "https://b.example/path"',
    );
  });

  it.each([
    [' true ', true],
    ['12', 12],
    ['255', 255],
    [
      'linklocal, loopback, uniquelocal',
      ['linklocal', 'loopback', 'uniquelocal'],
    ],
    ['10.0.0.0/32, fd00::/128', ['10.0.0.0/32', 'fd00::/128']],
  ])('reads TRUST_PROXY=%j', (raw, expected) => {
    expect(read({ TRUST_PROXY: raw }).TRUST_PROXY).toEqual(expected);
  });

  it.each(['10.0.0.0/', '10.0.0.0/1x', '10.0.0.0/x1', '10.0.0.0/0032'])(
    'refuses TRUST_PROXY=%j',
    (raw) => {
      expect(() => read({ TRUST_PROXY: raw })).toThrow(
        `TRUST_PROXY must be false, true, a hop count up to 255, or a comma-separated list of addresses and CIDRs (or loopback, linklocal, uniquelocal), got ${JSON.stringify(raw)}`,
      );
    },
  );

  it('refuses a DATABASE_URL that only contains a valid one', () => {
    for (const url of ['xsqlite:a.db', 'sqlite:a.db\nmore']) {
      expect(() => read({ DATABASE_URL: url })).toThrow(
        /^DATABASE_URL must be/,
      );
    }
  });

  it('shows the value of a variable that holds no secret as written', () => {
    expect(() => read({ PUBLIC_BASE_URL: 'ftp://user:pw@host' })).toThrow(
      'PUBLIC_BASE_URL must be an absolute http or https URL, got "ftp://user:pw@host"',
    );
  });

  it('says what text is expected of a value that is not text', () => {
    expect(() => read({ HOST: 5 as unknown as string })).toThrow(
      'HOST must be text, got "5"',
    );
  });

  it('hides the password of a URL it refuses', () => {
    expect(() => read({ REDIS_URL: 'http://user:secret@cache:6379' })).toThrow(
      'REDIS_URL must be redis://[user:password@]host:port[/db] or rediss://..., with any /, #, ?, @ or % of the password percent-encoded (%2F, %23, %3F, %40, %25), got "http://***@cache:6379"',
    );
    expect(() =>
      read({ DATABASE_URL: 'mysql://root:secret@db/plants' }),
    ).toThrow(/got "mysql:\/\/\*\*\*@db\/plants"$/);
  });
});

describe('.env', () => {
  let folder: string;

  beforeEach(() => {
    folder = mkdtempSync(join(tmpdir(), 'plant-store-env-'));
  });

  afterEach(() => rmSync(folder, { recursive: true, force: true }));

  it('is read under the environment, which wins where both set a variable', () => {
    const file = join(folder, '.env');
    writeFileSync(
      file,
      'PORT=3100\nLOG_LEVEL=debug\n# a comment\nHOST="127.0.0.1"\n',
    );
    const env: NodeJS.ProcessEnv = { LOG_LEVEL: 'warn' };
    const read = loadEnvironment(env, file);
    expect([read.PORT, read.LOG_LEVEL, read.HOST]).toEqual([
      3100,
      'warn',
      '127.0.0.1',
    ]);
    expect(env).toEqual({ PORT: '3100', LOG_LEVEL: 'warn', HOST: '127.0.0.1' });
  });

  it('is optional', () => {
    expect(loadEnvironment({}, join(folder, '.env')).PORT).toBe(3000);
  });

  it('names the setting a short misspelt variable of the file was meant for, where one of the environment is left alone', () => {
    const file = join(folder, '.env');
    writeFileSync(file, 'PROT=3312\n');
    const env: NodeJS.ProcessEnv = { HOME: '/root' };
    loadEnvironment(env, file);
    expect(unknownSettingWarnings(env)).toEqual([
      `PROT (set in ${file}) is not a setting of the plant store and is ignored; the closest one is PORT`,
    ]);
  });

  it("names the file in a bad value's error", () => {
    const file = join(folder, '.env');
    writeFileSync(file, 'PORT=eighty\n');
    expect(() => loadEnvironment({}, file)).toThrow(
      new ConfigError(
        `PORT must be an integer between 0 and 65535, got "eighty" (set in ${file})`,
      ),
    );
  });

  it('docs/configuration.md has an entry for every variable, with the default it has', () => {
    const page = readFileSync(
      join(__dirname, '..', '..', '..', 'docs', 'configuration.md'),
      'utf8',
    );
    // a default worked out from another setting ("half of ...") is declared as none
    const stated = Object.fromEntries(
      [
        ...page.matchAll(/^- `([A-Z_]+)` \(default (`[^`]*`|[^)`][^:]*?)\):/gm),
      ].map(([, name, shown]) => [
        name,
        shown.startsWith('`') ? shown : '(none)',
      ]),
    );
    const declared = Object.fromEntries(
      Object.keys(ENVIRONMENT_SCHEMA.shape).map((name) => {
        const { fallback } = metaOf(name);
        return [name, fallback === undefined ? '(none)' : `\`${fallback}\``];
      }),
    );
    expect(stated).toEqual(declared);
  });
});

describe('settings that cannot be read', () => {
  it('are all reported at once, a line each', () => {
    let message = '';
    try {
      parseEnvironment({
        PORT: 'eighty',
        LOG_LEVEL: 'loud',
        DB_POOL_SIZE: '0',
      });
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message.split('\n')).toEqual([
      'PORT must be an integer between 0 and 65535, got "eighty"',
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
      'DB_POOL_SIZE must be an integer between 1 and 1000, got "0"',
    ]);
  });
});

describe('unknownSettingWarnings', () => {
  it('names the setting a misspelt variable was meant for', () => {
    expect(unknownSettingWarnings({ RATE_LIMT_PER_TOKEN: '5' })).toEqual([
      'RATE_LIMT_PER_TOKEN is not a setting of the plant store and is ignored; the closest one is RATE_LIMIT_PER_TOKEN',
    ]);
    expect(unknownSettingWarnings({ PROT: '3100' })).toEqual([]);
    expect(unknownSettingWarnings({ LOG_LEVLE: 'debug' })).toEqual([
      'LOG_LEVLE is not a setting of the plant store and is ignored; the closest one is LOG_LEVEL',
    ]);
  });

  it("warns of any variable in one of the settings' families", () => {
    expect(unknownSettingWarnings({ REDIS_TIMEOUTS_MS: '1' })).toEqual([
      'REDIS_TIMEOUTS_MS is not a setting of the plant store and is ignored; the closest one is REDIS_TIMEOUT',
    ]);
    expect(unknownSettingWarnings({ REDIS_HOST: 'cache' })).toHaveLength(1);
  });

  it("leaves the machine's own variables and the settings themselves alone", () => {
    expect(
      unknownSettingWarnings({
        PATH: '/bin',
        HOME: '/root',
        HOSTNAME: 'vm',
        PWD: '/work',
        NODE_ENV: 'production',
        TEST_DATABASE_URL: 'postgres://x',
        npm_config_nodedir: '/x',
        PORT: '3100',
        REDIS_TIMEOUT: '5s',
      }),
    ).toEqual([]);
  });
});
