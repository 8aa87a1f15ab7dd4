import { registerAs } from '@nestjs/config';
import { readBoolean, readDuration, readInteger } from './read-env';

export interface WebhooksConfig {
  /** Deliver to loopback, private, link-local and metadata addresses too (tests, labs). */
  allowPrivateNetworks: boolean;
  timeoutMs: number;
  retryBaseMs: number;
  retryMaxDelayMs: number;
  /** After this long since the plant was added, a delivery that keeps failing is marked failed. */
  retryWindowMs: number;
  pollIntervalMs: number;
  /** Attempts one instance runs at once. */
  maxInFlight: number;
  /** Of those, for one subscription: a slow receiver holds this many slots and no more. */
  maxInFlightPerSubscription: number;
}

export function readWebhooksConfig(env: NodeJS.ProcessEnv): WebhooksConfig {
  const maxInFlight = readInteger(env, 'WEBHOOKS_MAX_IN_FLIGHT', 64, 1, 10_000);
  return {
    allowPrivateNetworks: readBoolean(
      env,
      'WEBHOOKS_ALLOW_PRIVATE_NETWORKS',
      false,
    ),
    timeoutMs: readDuration(env, 'WEBHOOKS_TIMEOUT', 10_000),
    retryBaseMs: readDuration(env, 'WEBHOOKS_RETRY_BASE', 5_000),
    retryMaxDelayMs: readDuration(env, 'WEBHOOKS_RETRY_MAX_DELAY', 3_600_000),
    retryWindowMs: readDuration(env, 'WEBHOOKS_RETRY_WINDOW', 86_400_000),
    pollIntervalMs: readDuration(env, 'WEBHOOKS_POLL_INTERVAL', 500),
    maxInFlight,
    maxInFlightPerSubscription: readInteger(
      env,
      'WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION',
      Math.max(1, Math.floor(maxInFlight / 4)),
      1,
      maxInFlight,
    ),
  };
}

export const webhooksConfig = registerAs('webhooks', () =>
  readWebhooksConfig(process.env),
);
