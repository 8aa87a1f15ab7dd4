import { z } from 'zod';
import {
  boolean,
  byteSize,
  choice,
  duration,
  httpUrl,
  integer,
  type Kind,
  origins,
  redisUrl,
  text,
  trustProxy,
  variable,
  wholeSeconds,
} from './setting-kinds';

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
});

export type Environment = z.output<typeof ENVIRONMENT_SCHEMA>;
