import { registerAs } from '@nestjs/config';
import { ConfigError, parseEnvironment } from './environment';

export interface WebhooksConfig {
  /** Deliver to loopback, private, link-local and metadata addresses too (tests, labs). */
  allowPrivateNetworks: boolean;
  timeoutMs: number;
  /**
   * A receiver answering slower than this gets fewer attempts at once, in proportion, and no
   * spare slot (lane-pace.ts in the webhooks module); slowness is never a failure.
   */
  slowMs: number;
  retryBaseMs: number;
  retryMaxDelayMs: number;
  /** After this long since the plant was added, a delivery that keeps failing is marked failed. */
  retryWindowMs: number;
  pollIntervalMs: number;
  /** Attempts one instance runs at once. */
  maxInFlight: number;
  /** Of those, for one subscription: a slow receiver holds this many slots and no more. */
  maxInFlightPerSubscription: number;
  /** A subscription whose oldest undelivered event is older than this is logged as lagging. */
  lagWarnMs: number;
  /** Failed attempts in a row after which a subscription is paused. */
  failuresBeforePause: number;
  /** Its first pause, doubling after each failed probe up to retryMaxDelayMs. */
  pauseMs: number;
  /** Events and their delivered or cancelled deliveries older than this are deleted. */
  retentionMs: number;
  /** Failed deliveries, and their events, older than this are deleted. */
  failedRetentionMs: number;
  retentionIntervalMs: number;
}

export function readWebhooksConfig(env: NodeJS.ProcessEnv): WebhooksConfig {
  const read = parseEnvironment(env);
  const maxInFlight = read.WEBHOOKS_MAX_IN_FLIGHT;
  const perSubscription =
    read.WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION ??
    Math.max(1, Math.floor(maxInFlight / 2));
  const timeoutMs = read.WEBHOOKS_TIMEOUT;
  const slowMs = read.WEBHOOKS_SLOW ?? Math.floor(timeoutMs / 2);
  if (slowMs >= timeoutMs) {
    throw new ConfigError(
      `WEBHOOKS_SLOW must be shorter than WEBHOOKS_TIMEOUT (${timeoutMs} ms), got ${slowMs} ms`,
    );
  }
  if (perSubscription > maxInFlight) {
    throw new ConfigError(
      `WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION must be at most WEBHOOKS_MAX_IN_FLIGHT (${maxInFlight}), got ${perSubscription}`,
    );
  }
  return {
    allowPrivateNetworks: read.WEBHOOKS_ALLOW_PRIVATE_NETWORKS,
    timeoutMs,
    slowMs,
    retryBaseMs: read.WEBHOOKS_RETRY_BASE,
    retryMaxDelayMs: read.WEBHOOKS_RETRY_MAX_DELAY,
    retryWindowMs: read.WEBHOOKS_RETRY_WINDOW,
    pollIntervalMs: read.WEBHOOKS_POLL_INTERVAL,
    maxInFlight,
    maxInFlightPerSubscription: perSubscription,
    lagWarnMs: read.WEBHOOKS_LAG_WARN,
    failuresBeforePause: read.WEBHOOKS_FAILURES_BEFORE_PAUSE,
    pauseMs: read.WEBHOOKS_PAUSE,
    retentionMs: read.EVENTS_RETENTION,
    failedRetentionMs: read.EVENTS_FAILED_RETENTION,
    retentionIntervalMs: read.RETENTION_INTERVAL,
  };
}

export const webhooksConfig = registerAs('webhooks', () =>
  readWebhooksConfig(process.env),
);
