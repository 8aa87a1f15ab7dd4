import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import leven from 'leven';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { StartupError } from '../common/errors/startup-error';

/** A configuration value that the service cannot start with; its message is one line naming the variable. */
export class ConfigError extends StartupError {
  override readonly name = 'ConfigError';
}

/** How a variable is written: its schema, and what the error says it must be. */
export interface Kind<T> {
  schema: z.ZodType<T, string>;
  must: string;
  /** Its value may hold a password: errors show it with the credentials hidden. */
  secret?: boolean;
}

/** What `.env.example` and errors say of a variable. */
interface VariableMeta {
  /** Written as a user would write it; undefined when unset means "off" or "derived". */
  fallback?: string;
  description: string;
  must: string;
  secret: boolean;
  /** A value other than the default (a module's setting): shown in `.env.example`. */
  example?: string;
}

/**
 * A variable: unset or empty takes `fallback`, which is then read like any written value, so
 * defaults and settings go through the same checks and units.
 */
export function variable<T>(
  kind: Kind<T>,
  fallback: string,
  description: string,
  example?: string,
): z.ZodType<T>;
export function variable<T>(
  kind: Kind<T>,
  fallback: undefined,
  description: string,
  example?: string,
): z.ZodType<T | undefined>;
export function variable<T>(
  kind: Kind<T>,
  fallback: string | undefined,
  description: string,
  example?: string,
): z.ZodType<T | undefined> {
  const meta: VariableMeta = {
    fallback,
    description,
    must: kind.must,
    secret: kind.secret ?? false,
    ...(example !== undefined && { example }),
  };
  return z
    .preprocess(
      (raw) => (raw === undefined || raw === '' ? fallback : raw),
      fallback === undefined ? kind.schema.optional() : kind.schema,
    )
    .meta({ ...meta });
}

/** A transform that reads text into a value, or undefined when the text is not one. */
function readAs<T>(
  read: (text: string) => T | undefined,
): z.ZodType<T, string> {
  return z.string().transform((text, context) => {
    const value = read(text);
    if (value === undefined) {
      context.addIssue({ code: 'custom', input: text });
      return z.NEVER;
    }
    return value;
  });
}

/** Digits only, within bounds: `3000`, not `3000.5`, ` 5`, `1e1` or `0x10`. */
function integer(min: number, max: number): Kind<number> {
  return {
    schema: readAs((text) =>
      /^\d+$/.test(text) && Number(text) >= min && Number(text) <= max
        ? Number(text)
        : undefined,
    ),
    must: `an integer between ${min} and ${max}`,
  };
}

const DURATION_UNITS_MS = {
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/** How durations are written: digits and a unit, `500ms`, `10s`, `5m`, `24h`, `2d`. */
export const DURATION_FORMAT = /^(\d+)(ms|s|m|h|d)$/;

/** A duration in milliseconds; undefined when it is not written as one, or not positive and safe. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION_FORMAT.exec(text.trim());
  const ms = match
    ? Number(match[1]) *
      DURATION_UNITS_MS[match[2] as keyof typeof DURATION_UNITS_MS]
    : NaN;
  return Number.isSafeInteger(ms) && ms > 0 ? ms : undefined;
}

/** A positive duration in milliseconds; `0s` too when `zero` is allowed. */
function duration({ zero = false } = {}): Kind<number> {
  return {
    schema: readAs((text) =>
      zero && /^0(ms|s|m|h|d)$/.test(text.trim()) ? 0 : parseDuration(text),
    ),
    must: `a ${zero ? '' : 'positive '}duration such as 500ms, 10s, 5m, 24h or 2d`,
  };
}

/** A positive duration of whole seconds, in milliseconds: what a Redis expiry in seconds keeps. */
function wholeSeconds(): Kind<number> {
  return {
    schema: readAs((text) => {
      const ms = parseDuration(text);
      return ms !== undefined && ms % 1000 === 0 ? ms : undefined;
    }),
    must: 'a positive duration of whole seconds such as 30s, 5m, 24h or 2d',
  };
}

const BYTE_UNITS = { '': 1, b: 1, kb: 1024, mb: 1024 ** 2 };

/** Sizes as express writes them: `16384`, `16kb`, `1mb`. */
function byteSize(max: number): Kind<number> {
  return {
    schema: readAs((text) => {
      const match = /^(\d+)\s*(b|kb|mb)?$/i.exec(text.trim());
      if (!match) return undefined;
      const unit = (match[2] ?? '').toLowerCase() as keyof typeof BYTE_UNITS;
      const bytes = Number(match[1]) * BYTE_UNITS[unit];
      return bytes >= 1 && bytes <= max ? bytes : undefined;
    }),
    must: `a size between 1 byte and ${max / 1024 ** 2}mb such as 16kb`,
  };
}

function choice<const T extends readonly [string, ...string[]]>(
  choices: T,
): Kind<T[number]> {
  return { schema: z.enum(choices), must: `one of ${choices.join(', ')}` };
}

const text: Kind<string> = { schema: z.string(), must: 'text' };

const boolean: Kind<boolean> = {
  schema: z.enum(['true', 'false']).transform((value) => value === 'true'),
  must: 'true or false',
};

function isHttpUrl(value: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** An absolute http(s) URL without its trailing slash. */
const httpUrl: Kind<string> = {
  schema: readAs((value) =>
    isHttpUrl(value) ? value.replace(/\/+$/, '') : undefined,
  ),
  must: 'an absolute http or https URL',
};

/** `localhost`, or an address in 127.0.0.0/8 or ::1 (a name such as `127.example.com` is not). */
function isLoopbackHost({ hostname }: URL): boolean {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return (
    host === 'localhost' ||
    (ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback')
  );
}

/** https, or http to this machine alone (a test's or a lab's identity provider). */
export function isIdentityProviderUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (
      url.protocol === 'https:' ||
      (url.protocol === 'http:' && isLoopbackHost(url))
    );
  } catch {
    return false;
  }
}

/** An identity provider's URL, kept exactly as written: an issuer is compared character for character. */
const identityProviderUrl: Kind<string> = {
  schema: readAs((value) => (isIdentityProviderUrl(value) ? value : undefined)),
  must: 'an absolute https URL (http only on loopback)',
};

/** The signatures an access token may carry: public-key ones only, so never `none` or HMAC. */
export const JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
] as const;

const jwtAlgorithms: Kind<string[]> = {
  schema: z
    .string()
    .transform((value) => value.split(',').map((item) => item.trim()))
    .pipe(z.array(z.enum(JWT_ALGORITHMS)).min(1)),
  must: `a comma-separated list of ${JWT_ALGORITHMS.join(', ')}`,
};

/**
 * Whether the URL means what it says: a host, at most a database number, nothing after a `#`.
 * A password's raw `/`, `#` or `?` ends the userinfo early, leaving no host and the rest of
 * the password in the path or fragment, which the Redis client would read as such.
 */
function isRedisUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return (
      ['redis:', 'rediss:'].includes(url.protocol) &&
      url.hostname !== '' &&
      /^(\/\d*)?$/.test(url.pathname) &&
      !value.includes('#')
    );
  } catch {
    return false;
  }
}

const redisUrl: Kind<string> = {
  schema: z.string().refine(isRedisUrl),
  must: 'redis://[user:password@]host:port[/db] or rediss://..., with any /, #, ?, @ or % of the password percent-encoded (%2F, %23, %3F, %40, %25)',
  secret: true,
};

function isOrigin(value: string): boolean {
  try {
    return new URL(value).origin === value;
  } catch {
    return false;
  }
}

/** Browser origins, comma-separated: `https://app.example.com`, not a path or `*`. */
const origins: Kind<string[]> = {
  schema: z.string().transform((value, context) => {
    const list = value.split(',').map((origin) => origin.trim());
    const wrong = list.find((origin) => !isOrigin(origin));
    if (wrong !== undefined) {
      context.addIssue({ code: 'custom', input: wrong });
      return z.NEVER;
    }
    return list;
  }),
  must: 'a comma-separated list of origins such as https://app.example.com',
};

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/** `10.0.0.7`, `10.0.0.0/8`, `fd00::1`, `fd00::/8`; not ipaddr's legacy forms (`1234`, `0x7f.1`). */
function isAddressOrCidr(value: string): boolean {
  const [address, bits, ...rest] = value.split('/');
  const isV4 = ipaddr.IPv4.isValidFourPartDecimal(address);
  if (!(isV4 || ipaddr.IPv6.isValid(address)) || rest.length > 0) return false;
  return (
    bits === undefined ||
    (/^\d{1,3}$/.test(bits) && Number(bits) <= (isV4 ? 32 : 128))
  );
}

/**
 * Express's `trust proxy`: which peers may say, in X-Forwarded-For, -Proto and -Host, who the
 * client is and how it reached us. Off, all, a hop count, or addresses and CIDRs (with the
 * names `loopback`, `linklocal` and `uniquelocal`).
 */
export type TrustProxy = boolean | number | string[];

const trustProxy: Kind<TrustProxy> = {
  schema: z.string().transform((value, context): TrustProxy => {
    const raw = value.trim();
    if (raw === 'false' || raw === 'true') return raw === 'true';
    if (/^\d+$/.test(raw)) {
      if (Number(raw) <= 255) return Number(raw);
      context.addIssue({ code: 'custom', input: raw });
      return z.NEVER;
    }
    const items = raw.split(',').map((item) => item.trim());
    const wrong = items.find(
      (item) => !PROXY_RANGE_NAMES.includes(item) && !isAddressOrCidr(item),
    );
    if (wrong !== undefined) {
      context.addIssue({ code: 'custom', input: wrong });
      return z.NEVER;
    }
    return items;
  }),
  must: 'false, true, a hop count up to 255, or a comma-separated list of addresses and CIDRs (or loopback, linklocal, uniquelocal)',
};

export const LOG_LEVELS = [
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
] as const;

/** The default database: a file under the working directory (the CLI names it as an absolute path). */
export const DEFAULT_DATABASE_URL = 'sqlite:data/plant-store.sqlite';

const databaseUrl: Kind<string> = {
  schema: z.string().regex(/^(sqlite:.+|postgres(ql)?:\/\/.*)$/),
  must: 'sqlite:<path>, sqlite::memory: or postgres://user:password@host:port/database',
  secret: true,
};

const MiB = 1024 ** 2;

/**
 * Every variable the service and its CLI read, once: its form, its default and its meaning.
 * `.env.example` is written from this (a test keeps it so), and docs/configuration.md follows it.
 */
export const ENVIRONMENT_SCHEMA = z.object({
  PORT: variable(integer(0, 65535), '3000', 'TCP port to listen on'),
  HOST: variable(
    text,
    '0.0.0.0',
    'Address to listen on (0.0.0.0 for every interface)',
  ),
  PUBLIC_BASE_URL: variable(
    httpUrl,
    undefined,
    "URL clients reach the service at, named in the OpenAPI document and Link headers; unset, each request's own address",
  ),
  TRUST_PROXY: variable(
    trustProxy,
    'false',
    'Proxies whose X-Forwarded-* headers are believed: false, true, a hop count, or addresses and CIDRs',
  ),
  METRICS_PORT: variable(
    integer(0, 65535),
    undefined,
    'Port of the Prometheus metrics (GET /metrics), apart from the API; unset, none are served',
  ),
  TRACES_BACKGROUND: variable(
    boolean,
    'false',
    "With traces on: give the work no request asked for (the webhook dispatcher's polls, retention's batches) spans of its own; off, only requests and webhook attempts start traces",
  ),
  TRACES_FOLLOW_CALLERS: variable(
    boolean,
    'false',
    "With traces on: let a request's traceparent decide whether it is traced; off, OTEL_TRACES_SAMPLER decides every request, continuing the caller's trace when it picks it",
  ),
  LOG_LEVEL: variable(
    choice(LOG_LEVELS),
    'info',
    'Least severe log level written',
  ),
  BODY_LIMIT: variable(
    byteSize(64 * MiB),
    '16kb',
    'Largest request body accepted',
  ),
  PAGE_MAX_BYTES: variable(
    byteSize(64 * MiB),
    '1mb',
    'A list page stops filling before its JSON passes this, and links to the rest',
  ),
  CORS_ORIGINS: variable(
    origins,
    undefined,
    'Origins allowed to call the API from a browser, comma-separated; empty turns CORS off',
  ),
  REQUEST_TIMEOUT: variable(
    duration(),
    '30s',
    'The whole request, headers and body, must arrive within this',
  ),
  HEADERS_TIMEOUT: variable(
    duration(),
    '10s',
    "A request's headers must arrive within this",
  ),
  KEEP_ALIVE_TIMEOUT: variable(
    duration(),
    '5s',
    'An idle kept-alive connection is closed after this',
  ),
  MAX_CONNECTIONS_PER_ADDRESS: variable(
    integer(0, 1_000_000),
    '256',
    'Connections one client address may hold open at once; 0 for no cap',
  ),
  SHUTDOWN_GRACE_PERIOD: variable(
    duration(),
    '10s',
    'On SIGTERM, in-flight requests get this long to finish before they are cut',
  ),
  SHUTDOWN_DELAY: variable(
    duration({ zero: true }),
    '0s',
    'On SIGTERM, keep serving this long (readiness already 503) before closing the listener',
  ),
  REDIS_URL: variable(
    redisUrl,
    undefined,
    'Redis for rate-limit counters shared by instances; unset, each instance counts in memory',
  ),
  REDIS_KEY_PREFIX: variable(
    text,
    'plant-store:',
    'Before every Redis key, so services sharing one Redis never meet',
  ),
  REDIS_TIMEOUT: variable(
    duration(),
    '500ms',
    'A Redis command slower than this fails, and the limits are not applied',
  ),
  RATE_LIMIT_WINDOW: variable(
    wholeSeconds(),
    '1m',
    'The window the rate limits count over',
  ),
  RATE_LIMIT_PER_TOKEN: variable(
    integer(1, 1e9),
    '6000',
    'Requests per window for each bearer token',
  ),
  RATE_LIMIT_PER_ADDRESS: variable(
    integer(1, 1e9),
    '600',
    'Requests per window for each client address without a proven token',
  ),
  RATE_LIMIT_BAD_TOKENS: variable(
    integer(1, 1e9),
    '20',
    'Rejected tokens per window from one address before it is blocked',
  ),
  RATE_LIMIT_BAD_TOKEN_BLOCK: variable(
    wholeSeconds(),
    '15m',
    'How long an address that tried too many bad tokens is blocked',
  ),
  DATABASE_URL: variable(
    databaseUrl,
    DEFAULT_DATABASE_URL,
    'sqlite:<path> (relative to the working directory), sqlite::memory: or postgres://user:password@host:port/database',
  ),
  DB_SYNCHRONOUS: variable(
    choice(['normal', 'full']),
    'normal',
    'SQLite: normal survives a crash of the process, full also a power loss',
  ),
  DB_POOL_SIZE: variable(
    integer(1, 1000),
    '10',
    'PostgreSQL: connections in the pool',
  ),
  DB_STATEMENT_TIMEOUT: variable(
    duration(),
    '5s',
    'PostgreSQL: the server cancels a statement that runs longer',
  ),
  DB_CONNECT_TIMEOUT: variable(
    duration(),
    '5s',
    'PostgreSQL: opening a connection that takes longer fails (the server is unreachable)',
  ),
  DB_BUSY_TIMEOUT: variable(
    duration(),
    '10s',
    'PostgreSQL: how long work waits its turn (a free pooled connection; a transaction retried after conflicts) before 503 busy, nothing changed',
  ),
  DB_QUEUE_LIMIT: variable(
    integer(1, 1_000_000),
    '1000',
    'PostgreSQL: work waiting for a pooled connection at most; more gets 503 busy at once',
  ),
  DB_PREPARED_STATEMENTS: variable(
    boolean,
    'true',
    'PostgreSQL: run statements with parameters as named (prepared) ones, parsed once per connection; false behind a pooler in transaction mode that does not keep them (PgBouncer before 1.21)',
  ),
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: variable(
    boolean,
    'false',
    'Deliver webhooks to loopback, private, link-local and metadata addresses too (tests, labs)',
  ),
  WEBHOOKS_TIMEOUT: variable(
    duration(),
    '10s',
    'A webhook receiver must answer within this',
  ),
  WEBHOOKS_SLOW: variable(
    duration(),
    undefined,
    'A receiver answering slower than this gets fewer attempts at once, in proportion; unset, half of WEBHOOKS_TIMEOUT',
  ),
  WEBHOOKS_RETRY_BASE: variable(
    duration(),
    '5s',
    'The first retry of a failed delivery waits about this long, doubling after',
  ),
  WEBHOOKS_RETRY_MAX_DELAY: variable(
    duration(),
    '1h',
    'The longest wait between two attempts',
  ),
  WEBHOOKS_RETRY_WINDOW: variable(
    duration(),
    '24h',
    'A delivery still failing this long after its event is marked failed',
  ),
  WEBHOOKS_POLL_INTERVAL: variable(
    duration(),
    '500ms',
    'How often an idle dispatcher looks for due deliveries',
  ),
  WEBHOOKS_MAX_IN_FLIGHT: variable(
    integer(1, 10_000),
    '64',
    'Delivery attempts one instance runs at once',
  ),
  WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION: variable(
    integer(1, 10_000),
    undefined,
    'Of those, for one subscription; unset, half of WEBHOOKS_MAX_IN_FLIGHT',
  ),
  WEBHOOKS_LAG_WARN: variable(
    duration(),
    '1m',
    'A subscription whose oldest undelivered event is older than this is logged as lagging (a warn line), and again once it has caught up',
  ),
  WEBHOOKS_FAILURES_BEFORE_PAUSE: variable(
    integer(1, 1000),
    '5',
    'A subscription whose receiver fails this many attempts in a row is paused',
  ),
  WEBHOOKS_PAUSE: variable(
    duration(),
    '1m',
    'Its first pause; each failed probe after one doubles it, up to WEBHOOKS_RETRY_MAX_DELAY',
  ),
  EVENTS_RETENTION: variable(
    duration(),
    '7d',
    'Events and their delivered or cancelled deliveries are deleted once this old',
  ),
  EVENTS_FAILED_RETENTION: variable(
    duration(),
    '30d',
    'Failed deliveries, and their events, are kept this long',
  ),
  RETENTION_INTERVAL: variable(
    duration(),
    '10m',
    'How often old events and deliveries are looked for',
  ),
  OIDC_ISSUER: variable(
    identityProviderUrl,
    undefined,
    "Accept your identity provider's access tokens (JWTs) beside the service's own: its issuer URL, exactly as the tokens' iss; unset, only the service's tokens",
  ),
  OIDC_AUDIENCE: variable(
    text,
    undefined,
    "With OIDC_ISSUER, required: the audience an access token must name in its aud, this service's identifier at the identity provider",
  ),
  OIDC_JWKS_URL: variable(
    identityProviderUrl,
    undefined,
    "Where the issuer's signing keys are; unset, the jwks_uri of <OIDC_ISSUER>/.well-known/openid-configuration",
  ),
  OIDC_ALGORITHMS: variable(
    jwtAlgorithms,
    'RS256,ES256,PS256,EdDSA',
    'The signature algorithms an access token may use; public-key ones only',
  ),
  OIDC_CLOCK_TOLERANCE: variable(
    duration({ zero: true }),
    '30s',
    "How far an access token's exp, nbf and iat may be off this machine's clock",
  ),
  OIDC_SCOPE_CLAIM: variable(
    text,
    undefined,
    'The claim that holds the scopes, a space-separated string or an array; unset, scope, else scp',
  ),
  OIDC_JWKS_COOLDOWN: variable(
    duration(),
    '5s',
    "The least time between two fetches of the issuer's keys: tokens with unknown key ids fetch them at most this often, waiting up to 5 s for the next fetch",
  ),
  OIDC_JWKS_MAX_AGE: variable(
    duration(),
    '10m',
    "The issuer's keys are fetched again once this old, so that a key it dropped stops working",
  ),
});

export type Environment = z.output<typeof ENVIRONMENT_SCHEMA>;

type RawEnvironment = Record<string, string | undefined>;

/** The kinds a module's settings are written in (src/platform/config/module-settings.ts). */
export const SETTING_KINDS = {
  integer,
  duration,
  byteSize,
  choice,
  text,
  boolean,
  httpUrl,
};

/** The settings each module declares in its folder, by module, in the order declared. */
const MODULE_SETTINGS = new Map<string, Record<string, z.ZodType>>();
let schemaWithModules: z.ZodObject | undefined;

/**
 * Adds a module's settings to those the service reads and checks at boot, `.env.example` and
 * the unknown-setting warnings (src/platform/config/module-settings.ts). A name that the service or
 * another module has already is refused when the module's file loads.
 */
export function declareModuleSettings(
  module: string,
  shape: Record<string, z.ZodType>,
): void {
  for (const name of Object.keys(shape)) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(name)) {
      throw new ConfigError(
        `the setting ${name} of the module ${module} must be written in capitals, digits and underscores, as CARE_OVERDUE_INTERVAL`,
      );
    }
    const owner =
      name in ENVIRONMENT_SCHEMA.shape
        ? 'the service itself'
        : [...MODULE_SETTINGS].find(
            ([other, settings]) => other !== module && name in settings,
          )?.[0];
    if (owner !== undefined) {
      throw new ConfigError(
        `the setting ${name} of the module ${module} is already declared by ${owner}: give it a name of its own, starting with the module's (${module.toUpperCase().replaceAll('-', '_')}_)`,
      );
    }
  }
  MODULE_SETTINGS.set(module, shape);
  schemaWithModules = undefined;
}

/** The modules that declared settings, with their names. */
export function moduleSettingNames(): [module: string, names: string[]][] {
  return [...MODULE_SETTINGS].map(([module, shape]) => [
    module,
    Object.keys(shape),
  ]);
}

/** Every setting the service reads: its own, then the modules'. */
function fullSchema(): z.ZodObject {
  return (schemaWithModules ??= ENVIRONMENT_SCHEMA.extend(
    Object.assign({}, ...MODULE_SETTINGS.values()) as Record<string, z.ZodType>,
  ));
}

/** Where a variable's value came from, when not the process environment (`.env`). */
const SOURCES = new WeakMap<object, Map<string, string>>();

export function metaOf(name: string): VariableMeta {
  const shape = fullSchema().shape as Record<string, z.ZodType>;
  return shape[name].meta() as unknown as VariableMeta;
}

/** The variable's error as one line: what it must be, what it was, and where it was set. */
function describeIssue(issue: z.core.$ZodIssue, env: RawEnvironment): string {
  const name = String(issue.path[0]);
  const { must, secret } = metaOf(name);
  // the wrong item of a list, or the whole value (set, since a default is never wrong)
  const got = typeof issue.input === 'string' ? issue.input : String(env[name]);
  // up to the last @, since a password refused may hold / or # or @ itself
  const shown = secret ? got.replace(/\/\/.*@/, '//***@') : got;
  const source = SOURCES.get(env)?.get(name);
  return `${name} must be ${must}, got ${JSON.stringify(shown)}${source ? ` (set in ${source})` : ''}`;
}

/**
 * Every variable checked and read; a ConfigError naming every one that is wrong, a line each,
 * so that a deployment is fixed in one go rather than one restart per mistake.
 */
export function parseEnvironment(env: RawEnvironment): Environment {
  // with the input of each issue, which names the wrong item of a list
  const result = fullSchema().safeParse(env, { reportInput: true });
  if (!result.success) {
    const firstPerVariable = new Map<string, z.core.$ZodIssue>();
    for (const issue of result.error.issues) {
      const name = String(issue.path[0]);
      if (!firstPerVariable.has(name)) firstPerVariable.set(name, issue);
    }
    throw new ConfigError(
      [...firstPerVariable.values()]
        .map((issue) => describeIssue(issue, env))
        .join('\n'),
    );
  }
  return result.data as Environment;
}

/** The families of settings (`WEBHOOKS_...`): a prefix that two or more of them share. */
function familyPrefixes(known: string[]): string[] {
  return [
    ...new Set(
      known
        .filter((name) => name.includes('_'))
        .map((name) => name.slice(0, name.indexOf('_') + 1))
        .filter(
          (prefix, _, prefixes) =>
            prefixes.filter((other) => other === prefix).length > 1,
        ),
    ),
  ];
}

/**
 * A warning for each variable that looks meant for the service but is none of its settings:
 * one of its families' prefixes (`WEBHOOKS_TIMEOUTS`), or a letter or two from a setting's
 * name (`RATE_LIMT_PER_TOKEN`). Such a variable is ignored, so the mistake would go unseen.
 */
export function unknownSettingWarnings(env: RawEnvironment): string[] {
  const knownVariables = Object.keys(fullSchema().shape);
  const prefixes = familyPrefixes(knownVariables);
  const warnings: string[] = [];
  for (const name of Object.keys(env)) {
    if (!/^[A-Z][A-Z0-9_]*$/.test(name) || knownVariables.includes(name)) {
      continue;
    }
    let closest = knownVariables[0];
    for (const known of knownVariables) {
      if (leven(name, known) < leven(name, closest)) closest = known;
    }
    const source = SOURCES.get(env)?.get(name);
    // a short name in the process environment is more likely the machine's own (HOME is as
    // near HOST as PROT is to PORT); one written in .env is meant for the service, whatever
    // its length
    const near =
      (name.length >= 5 || source !== undefined) &&
      leven(name, closest) <= Math.max(2, Math.floor(closest.length / 6));
    if (near || prefixes.some((prefix) => name.startsWith(prefix))) {
      warnings.push(
        `${name}${source ? ` (set in ${source})` : ''} is not a setting of the plant store and is ignored; the closest one is ${closest}`,
      );
    }
  }
  return warnings;
}

/**
 * `.env` in the working directory, under the process environment: a variable set in both
 * keeps the environment's value. Returns the environment to read, the same object, with where
 * each value from the file came from remembered for its error message.
 */
export function loadEnvironment(
  env: NodeJS.ProcessEnv = process.env,
  file = resolve('.env'),
): Environment {
  mergeEnvFile(env, file);
  return parseEnvironment(env);
}

/**
 * The variables of `.env` that the environment does not set, put into it, unchecked: for what
 * must read them before anything else loads (tracing), and for loadEnvironment, which checks
 * them. Merging twice changes nothing.
 */
export function mergeEnvFile(
  env: NodeJS.ProcessEnv = process.env,
  file = resolve('.env'),
): void {
  if (!existsSync(file)) return;
  const fromFile = parseEnv(readFileSync(file, 'utf8'));
  const sources = SOURCES.get(env) ?? new Map<string, string>();
  for (const [name, value] of Object.entries(fromFile)) {
    if (env[name] !== undefined) continue;
    env[name] = value;
    sources.set(name, file);
  }
  SOURCES.set(env, sources);
}

/** A module's folder under src: a part of the platform, beside this one, or a product module. */
function folderOf(module: string): string {
  return existsSync(join(__dirname, '..', module))
    ? `platform/${module}`
    : `modules/${module}`;
}

/**
 * The table of the modules' settings in docs/configuration.md, between its markers: each one's
 * name, default and meaning, and its module.
 */
export function renderModuleSettingsTable(): string {
  const rows = moduleSettingNames().flatMap(([module, names]) =>
    names.map((name) => {
      const { fallback, description } = metaOf(name);
      const shown = fallback === undefined ? '(none)' : `\`${fallback}\``;
      return `| \`${name}\` | ${shown} | ${description} | [${module}](../src/${folderOf(module)}) |`;
    }),
  );
  return [
    '| setting | default | what | module |',
    '| --- | --- | --- | --- |',
    ...rows,
  ].join('\n');
}

/**
 * `.env.example`: every variable, commented out at its default, under its meaning; the
 * service's own, then each module's under its name, with an example of another value.
 */
export function renderEnvExample(): string {
  const entry = (name: string) => {
    const { fallback, description, example } = metaOf(name);
    const other = example === undefined ? '' : ` (for example ${example})`;
    return `# ${description}${other}\n# ${name}=${fallback ?? ''}\n`;
  };
  const modules = moduleSettingNames().map(
    ([module, names]) =>
      `# --- the ${module} module (src/${folderOf(module)}) ---\n\n${names.map(entry).join('\n')}`,
  );
  return [
    '# The plant store reads .env from its working directory; the environment wins over it.',
    '# Every variable, at its default. Generated by `npm run config:generate` from',
    "# src/platform/config/environment.ts and each module's *.settings.ts.",
    '',
    [
      Object.keys(ENVIRONMENT_SCHEMA.shape).map(entry).join('\n'),
      ...modules,
    ].join('\n'),
  ].join('\n');
}
