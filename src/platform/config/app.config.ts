import { registerAs } from '@nestjs/config';
import { parseEnvironment } from './environment';
import { LOG_LEVELS } from './environment-schema';
import { type TrustProxy } from './setting-kinds';

export { LOG_LEVELS, type TrustProxy };

export type LogLevel = (typeof LOG_LEVELS)[number];

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
  /** Where Prometheus scrapes `/metrics`, on HOST; undefined: no metrics are served. */
  metricsPort?: number;
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

export function readAppConfig(env: NodeJS.ProcessEnv): AppConfig {
  const read = parseEnvironment(env);
  return {
    port: read.PORT,
    host: read.HOST,
    publicBaseUrl: read.PUBLIC_BASE_URL,
    trustProxy: read.TRUST_PROXY,
    logLevel: read.LOG_LEVEL,
    bodyLimitBytes: read.BODY_LIMIT,
    pageMaxBytes: read.PAGE_MAX_BYTES,
    corsOrigins: read.CORS_ORIGINS ?? [],
    requestTimeoutMs: read.REQUEST_TIMEOUT,
    headersTimeoutMs: read.HEADERS_TIMEOUT,
    keepAliveTimeoutMs: read.KEEP_ALIVE_TIMEOUT,
    maxConnectionsPerAddress: read.MAX_CONNECTIONS_PER_ADDRESS,
    shutdownGracePeriodMs: read.SHUTDOWN_GRACE_PERIOD,
    shutdownDelayMs: read.SHUTDOWN_DELAY,
    metricsPort: read.METRICS_PORT,
    rateLimit: {
      redisUrl: read.REDIS_URL,
      redisKeyPrefix: read.REDIS_KEY_PREFIX,
      redisTimeoutMs: read.REDIS_TIMEOUT,
      windowMs: read.RATE_LIMIT_WINDOW,
      perToken: read.RATE_LIMIT_PER_TOKEN,
      perAddress: read.RATE_LIMIT_PER_ADDRESS,
      badTokens: read.RATE_LIMIT_BAD_TOKENS,
      badTokenBlockMs: read.RATE_LIMIT_BAD_TOKEN_BLOCK,
    },
  };
}

export const appConfig = registerAs('app', () => readAppConfig(process.env));
