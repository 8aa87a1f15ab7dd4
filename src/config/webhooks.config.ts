import { registerAs } from '@nestjs/config';
import { readBoolean, readDuration } from './read-env';

export interface WebhooksConfig {
  /** Deliver to loopback, private, link-local and metadata addresses too (tests, labs). */
  allowPrivateNetworks: boolean;
  timeoutMs: number;
  retryBaseMs: number;
  retryMaxDelayMs: number;
  /** After this long since the plant was added, a delivery that keeps failing is marked failed. */
  retryWindowMs: number;
  pollIntervalMs: number;
}

export function readWebhooksConfig(env: NodeJS.ProcessEnv): WebhooksConfig {
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
  };
}

export const webhooksConfig = registerAs('webhooks', () =>
  readWebhooksConfig(process.env),
);
