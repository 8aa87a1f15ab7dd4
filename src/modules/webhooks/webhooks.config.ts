import { registerAs } from '@nestjs/config';
import { ConfigError, declareSettings, setting } from '../../platform/config';

/** The webhooks' settings (docs/configuration.md, "Module settings"). */
const readSettings = declareSettings('webhooks', {
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: setting.boolean({
    default: 'false',
    example: 'true',
    description:
      'Deliver webhooks to loopback, private, link-local and metadata addresses too (tests, labs)',
  }),
  WEBHOOKS_TIMEOUT: setting.duration({
    default: '10s',
    example: '5s',
    description: 'How long a webhook receiver has to answer',
  }),
  WEBHOOKS_SLOW: setting.duration({
    example: '2s',
    description:
      'A receiver slower than this gets fewer attempts at once, never a pause; under WEBHOOKS_TIMEOUT; unset, half of it',
  }),
  WEBHOOKS_RETRY_BASE: setting.duration({
    default: '5s',
    example: '30s',
    description:
      'The first retry of a failed delivery waits about this long, doubling after each failure',
  }),
  WEBHOOKS_RETRY_MAX_DELAY: setting.duration({
    default: '1h',
    example: '15m',
    description: 'The longest wait between two attempts, and the longest pause',
  }),
  WEBHOOKS_RETRY_WINDOW: setting.duration({
    default: '24h',
    example: '3d',
    description:
      'A delivery still failing this long after its event is marked failed',
  }),
  WEBHOOKS_POLL_INTERVAL: setting.duration({
    default: '500ms',
    example: '1s',
    description:
      'How often the dispatcher looks for due deliveries when it has no backlog',
  }),
  WEBHOOKS_MAX_IN_FLIGHT: setting.integer(1, 10_000, {
    default: '64',
    example: '256',
    description: 'Delivery attempts one instance runs at once',
  }),
  WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION: setting.integer(1, 10_000, {
    example: '8',
    description:
      'Of those, for one subscription at most; unset, half of WEBHOOKS_MAX_IN_FLIGHT',
  }),
  WEBHOOKS_LAG_WARN: setting.duration({
    default: '1m',
    example: '10m',
    description:
      'A subscription whose oldest undelivered event is older gets a warn line, and an info line once caught up',
  }),
  WEBHOOKS_FAILURES_BEFORE_PAUSE: setting.integer(1, 1000, {
    default: '5',
    example: '10',
    description:
      'Failed attempts in a row that pause a receiver; its events wait in the log until a probe succeeds',
  }),
  WEBHOOKS_PAUSE: setting.duration({
    default: '1m',
    example: '5m',
    description:
      'The first pause; each failed probe doubles it, up to WEBHOOKS_RETRY_MAX_DELAY',
  }),
  EVENTS_RETENTION: setting.duration({
    default: '7d',
    example: '30d',
    description:
      'Events and their delivered or cancelled deliveries are deleted once this old (pending ones never)',
  }),
  EVENTS_FAILED_RETENTION: setting.duration({
    default: '30d',
    example: '90d',
    description: 'Failed deliveries, and their events, are kept this long',
  }),
  RETENTION_INTERVAL: setting.duration({
    default: '10m',
    example: '1h',
    description: 'How often old events and deliveries are looked for',
  }),
});

export interface WebhooksConfig {
  /** Deliver to loopback, private, link-local and metadata addresses too (tests, labs). */
  allowPrivateNetworks: boolean;
  timeoutMs: number;
  /**
   * A receiver answering slower than this gets fewer attempts at once, in proportion, and no
   * spare slot (lane-pace.ts); slowness is never a failure.
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
  const read = readSettings(env);
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
