import { registerAs } from '@nestjs/config';
import ipaddr from 'ipaddr.js';
import {
  ConfigError,
  readByteSize,
  readChoice,
  readDuration,
  readHttpUrl,
  readInteger,
  readString,
} from './read-env';

export const LOG_LEVELS = [
  'fatal',
  'error',
  'warn',
  'info',
  'debug',
  'trace',
  'silent',
] as const;

export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Express's `trust proxy`: which peers may say, in X-Forwarded-For, -Proto and -Host, who the
 * client is and how it reached us. Off, all, a hop count, or addresses and CIDRs (with the
 * names `loopback`, `linklocal` and `uniquelocal`).
 */
export type TrustProxy = boolean | number | string[];

export interface AppConfig {
  port: number;
  host: string;
  /**
   * The URL clients reach the service at, for the Link header and the OpenAPI server; when
   * unset, each request's own (its Host, or behind a trusted proxy X-Forwarded-Proto and -Host).
   */
  publicBaseUrl?: string;
  trustProxy: TrustProxy;
  logLevel: LogLevel;
  bodyLimitBytes: number;
  /** A list page stops filling before its JSON passes this, and links to the rest. */
  pageMaxBytes: number;
  /** Origins allowed to call the API from a browser; empty means CORS is off. */
  corsOrigins: string[];
  /** The whole request, headers and body, must arrive within this. */
  requestTimeoutMs: number;
  /** The request's headers must arrive within this. */
  headersTimeoutMs: number;
  /** An idle kept-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Connections one client address may hold open at once; 0 for no cap. */
  maxConnectionsPerAddress: number;
  /** On SIGTERM, in-flight requests get this long to finish before they are cut. */
  shutdownGracePeriodMs: number;
  /**
   * On SIGTERM, readiness answers 503 at once, but the listener keeps serving for this long
   * before it closes: a load balancer still sends new connections until it has seen that.
   */
  shutdownDelayMs: number;
  rateLimit: RateLimitConfig;
}

export interface RateLimitConfig {
  /** Where instances share their counters; in memory, per instance, when unset. */
  redisUrl?: string;
  /** Before every Redis key, so that services or test runs sharing one Redis never meet. */
  redisKeyPrefix: string;
  /** A Redis command or connection attempt that takes longer fails, and limits are not applied. */
  redisTimeoutMs: number;
  windowMs: number;
  /** Requests per window for each bearer token. */
  perToken: number;
  /** Requests per window for each client address, for requests without a proven token. */
  perAddress: number;
  /** Rejected tokens per window from one address before it is blocked. */
  badTokens: number;
  /** How long an address that tried too many bad tokens is blocked. */
  badTokenBlockMs: number;
}

function readRedisUrl(env: NodeJS.ProcessEnv): string | undefined {
  const raw = readString(env, 'REDIS_URL', '');
  if (raw === '') return undefined;
  if (!/^rediss?:\/\/[^/]+/.test(raw)) {
    throw new ConfigError(
      `REDIS_URL must be redis://host:port[/db] or rediss://..., got ${JSON.stringify(raw.replace(/\/\/[^@]*@/, '//***@'))}`,
    );
  }
  return raw;
}

function readOrigins(env: NodeJS.ProcessEnv): string[] {
  const raw = readString(env, 'CORS_ORIGINS', '');
  if (raw === '') return [];
  return raw.split(',').map((origin) => {
    const trimmed = origin.trim();
    let parsed: URL | undefined;
    try {
      parsed = new URL(trimmed);
    } catch {
      parsed = undefined;
    }
    if (!parsed || parsed.origin !== trimmed) {
      throw new ConfigError(
        `CORS_ORIGINS must be a comma-separated list of origins such as https://app.example.com, got ${JSON.stringify(trimmed)}`,
      );
    }
    return trimmed;
  });
}

const PROXY_RANGE_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

function readTrustProxy(env: NodeJS.ProcessEnv): TrustProxy {
  const raw = readString(env, 'TRUST_PROXY', 'false').trim();
  if (raw === 'false') return false;
  if (raw === 'true') return true;
  const refuse = (item: string) =>
    new ConfigError(
      `TRUST_PROXY must be false, true, a hop count up to 255, or a comma-separated list of addresses and CIDRs (or loopback, linklocal, uniquelocal), got ${JSON.stringify(item)}`,
    );
  if (/^\d+$/.test(raw)) {
    if (Number(raw) > 255) throw refuse(raw);
    return Number(raw);
  }
  return raw.split(',').map((entry) => {
    const item = entry.trim();
    if (!PROXY_RANGE_NAMES.includes(item) && !isAddressOrCidr(item)) {
      throw refuse(item);
    }
    return item;
  });
}

/** `10.0.0.7`, `10.0.0.0/8`, `fd00::1`, `fd00::/8`; not ipaddr's legacy forms (`1234`, `0x7f.1`). */
function isAddressOrCidr(text: string): boolean {
  const [address, bits, ...rest] = text.split('/');
  const isAddress =
    ipaddr.IPv4.isValidFourPartDecimal(address) || ipaddr.IPv6.isValid(address);
  if (!isAddress || rest.length > 0) return false;
  if (bits === undefined) return true;
  const max = ipaddr.IPv4.isValidFourPartDecimal(address) ? 32 : 128;
  return /^\d{1,3}$/.test(bits) && Number(bits) <= max;
}

export function readAppConfig(env: NodeJS.ProcessEnv): AppConfig {
  return {
    port: readInteger(env, 'PORT', 3000, 0, 65535),
    host: readString(env, 'HOST', '0.0.0.0'),
    publicBaseUrl: readHttpUrl(env, 'PUBLIC_BASE_URL'),
    trustProxy: readTrustProxy(env),
    logLevel: readChoice(env, 'LOG_LEVEL', 'info', LOG_LEVELS),
    bodyLimitBytes: readByteSize(env, 'BODY_LIMIT', 16 * 1024, 64 * 1024 ** 2),
    pageMaxBytes: readByteSize(
      env,
      'PAGE_MAX_BYTES',
      1024 ** 2,
      64 * 1024 ** 2,
    ),
    corsOrigins: readOrigins(env),
    requestTimeoutMs: readDuration(env, 'REQUEST_TIMEOUT', 30_000),
    headersTimeoutMs: readDuration(env, 'HEADERS_TIMEOUT', 10_000),
    keepAliveTimeoutMs: readDuration(env, 'KEEP_ALIVE_TIMEOUT', 5_000),
    maxConnectionsPerAddress: readInteger(
      env,
      'MAX_CONNECTIONS_PER_ADDRESS',
      256,
      0,
      1_000_000,
    ),
    shutdownGracePeriodMs: readDuration(env, 'SHUTDOWN_GRACE_PERIOD', 10_000),
    shutdownDelayMs: readDuration(env, 'SHUTDOWN_DELAY', 0),
    rateLimit: {
      redisUrl: readRedisUrl(env),
      redisKeyPrefix: readString(env, 'REDIS_KEY_PREFIX', 'plant-store:'),
      redisTimeoutMs: readDuration(env, 'REDIS_TIMEOUT', 500),
      windowMs: readDuration(env, 'RATE_LIMIT_WINDOW', 60_000),
      perToken: readInteger(env, 'RATE_LIMIT_PER_TOKEN', 6000, 1, 1e9),
      perAddress: readInteger(env, 'RATE_LIMIT_PER_ADDRESS', 600, 1, 1e9),
      badTokens: readInteger(env, 'RATE_LIMIT_BAD_TOKENS', 20, 1, 1e9),
      badTokenBlockMs: readDuration(env, 'RATE_LIMIT_BAD_TOKEN_BLOCK', 900_000),
    },
  };
}

export const appConfig = registerAs('app', () => readAppConfig(process.env));
