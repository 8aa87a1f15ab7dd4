#!/usr/bin/env node
// Prints a .env that sets every setting of .env.example to a value other than its default,
// each one a value that would break a test that let it in (an unreachable Redis and database,
// tiny limits, private webhooks allowed). .ci/run writes it to .env and exports it before
// `npm test`, proving that no test reads the developer's .env or environment (docs/testing.md).
import { readFileSync } from 'node:fs';

const VALUES = {
  PORT: '3100',
  HOST: '127.0.0.2',
  PUBLIC_BASE_URL: 'https://developer.example.invalid',
  TRUST_PROXY: 'true',
  METRICS_PORT: '9464',
  TRACES_BACKGROUND: 'true',
  TRACES_FOLLOW_CALLERS: 'true',
  LOG_LEVEL: 'trace',
  BODY_LIMIT: '1kb',
  PAGE_MAX_BYTES: '2kb',
  CORS_ORIGINS: 'https://developer.example.invalid',
  REQUEST_TIMEOUT: '2s',
  HEADERS_TIMEOUT: '1s',
  KEEP_ALIVE_TIMEOUT: '1s',
  MAX_CONNECTIONS_PER_ADDRESS: '2',
  SHUTDOWN_GRACE_PERIOD: '1s',
  SHUTDOWN_DELAY: '3s',
  REDIS_URL: 'redis://127.0.0.1:1/0',
  REDIS_KEY_PREFIX: 'developer:',
  REDIS_TIMEOUT: '50ms',
  RATE_LIMIT_WINDOW: '1h',
  RATE_LIMIT_PER_TOKEN: '3',
  RATE_LIMIT_PER_ADDRESS: '3',
  RATE_LIMIT_BAD_TOKENS: '1',
  RATE_LIMIT_BAD_TOKEN_BLOCK: '1h',
  DATABASE_URL: 'postgres://developer@127.0.0.1:1/nowhere',
  DB_SYNCHRONOUS: 'full',
  DB_POOL_SIZE: '1',
  DB_STATEMENT_TIMEOUT: '1s',
  DB_CONNECT_TIMEOUT: '1s',
  DB_BUSY_TIMEOUT: '1s',
  DB_QUEUE_LIMIT: '1',
  DB_PREPARED_STATEMENTS: 'false',
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOKS_TIMEOUT: '1s',
  WEBHOOKS_SLOW: '500ms',
  WEBHOOKS_RETRY_BASE: '1m',
  WEBHOOKS_RETRY_MAX_DELAY: '2h',
  WEBHOOKS_RETRY_WINDOW: '1h',
  WEBHOOKS_POLL_INTERVAL: '5s',
  WEBHOOKS_MAX_IN_FLIGHT: '1',
  WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION: '1',
  WEBHOOKS_LAG_WARN: '1ms',
  WEBHOOKS_FAILURES_BEFORE_PAUSE: '1',
  WEBHOOKS_PAUSE: '1h',
  EVENTS_RETENTION: '1d',
  EVENTS_FAILED_RETENTION: '2d',
  RETENTION_INTERVAL: '1h',
  // keys that expire, and leases that end, at once: no repeat would be replayed or held (a
  // module's setting: without these, its declaration's example)
  IDEMPOTENCY_TTL: '1ms',
  IDEMPOTENCY_LEASE: '1ms',
  // an identity provider nobody can reach: readiness would say 503, and its tokens be refused
  OIDC_ISSUER: 'https://developer.example.invalid/realms/dev',
  OIDC_AUDIENCE: 'developer',
  OIDC_JWKS_URL: 'https://developer.example.invalid/jwks',
  OIDC_ALGORITHMS: 'ES512',
  OIDC_CLOCK_TOLERANCE: '0s',
  OIDC_SCOPE_CLAIM: 'roles',
  OIDC_JWKS_COOLDOWN: '1h',
  OIDC_JWKS_MAX_AGE: '1ms',
};

const example = readFileSync(new URL('../.env.example', import.meta.url), 'utf8');
const lines = [];
// a module's setting brings its own other value, shown in .env.example as "(for example X)"
for (const [, description, name, fallback] of example.matchAll(/^# (.*)\n# ([A-Z][A-Z0-9_]*)=(.*)$/gm)) {
  const value = VALUES[name] ?? /\(for example (.+)\)$/.exec(description)?.[1];
  if (value === undefined || value === fallback) {
    console.error(
      `scripts/non-default-env.mjs: give ${name} a value other than its default (${fallback || 'unset'}): in VALUES here, or as the example of its declaration`,
    );
    process.exit(1);
  }
  lines.push(`${name}=${value}`);
}
// a misspelt setting too, which the service warns of
lines.push('RATE_LIMT_PER_TOKEN=1');
process.stdout.write(`${lines.join('\n')}\n`);
