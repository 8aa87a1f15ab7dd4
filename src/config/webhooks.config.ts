import { registerAs } from '@nestjs/config';
import { ConfigError, parseEnvironment } from './environment';

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
  const read = parseEnvironment(env);
  const maxInFlight = read.WEBHOOKS_MAX_IN_FLIGHT;
  const perSubscription =
    read.WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION ??
    Math.max(1, Math.floor(maxInFlight / 4));
  if (perSubscription > maxInFlight) {
    throw new ConfigError(
      `WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION must be at most WEBHOOKS_MAX_IN_FLIGHT (${maxInFlight}), got ${perSubscription}`,
    );
  }
  return {
    allowPrivateNetworks: read.WEBHOOKS_ALLOW_PRIVATE_NETWORKS,
    timeoutMs: read.WEBHOOKS_TIMEOUT,
    retryBaseMs: read.WEBHOOKS_RETRY_BASE,
    retryMaxDelayMs: read.WEBHOOKS_RETRY_MAX_DELAY,
    retryWindowMs: read.WEBHOOKS_RETRY_WINDOW,
    pollIntervalMs: read.WEBHOOKS_POLL_INTERVAL,
    maxInFlight,
    maxInFlightPerSubscription: perSubscription,
  };
}

export const webhooksConfig = registerAs('webhooks', () =>
  readWebhooksConfig(process.env),
);
