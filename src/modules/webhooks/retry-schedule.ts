import type { WebhooksConfig } from './webhooks.config';

/**
 * When to try again after `attempts` failed attempts: exponential backoff from the base delay,
 * capped, with jitter (a random 50 to 100 % of the delay) so that receivers coming back are not
 * hit by every retry at once. Undefined once the next try would fall outside the retry window.
 */
export function nextAttemptAt(
  attempts: number,
  createdAt: Date,
  now: Date,
  config: Pick<
    WebhooksConfig,
    'retryBaseMs' | 'retryMaxDelayMs' | 'retryWindowMs'
  >,
  random: () => number = Math.random,
): Date | undefined {
  const exponent = Math.min(attempts - 1, 40);
  const delay = Math.min(
    config.retryBaseMs * 2 ** exponent,
    config.retryMaxDelayMs,
  );
  const next = new Date(now.getTime() + delay * (0.5 + random() / 2));
  return next.getTime() - createdAt.getTime() > config.retryWindowMs
    ? undefined
    : next;
}
