import type { WebhooksConfig } from './webhooks.config';
import type { ReceiverState } from './delivery-store';

/**
 * Where a receiver stands (docs/decisions.md, "Webhook delivery"):
 *
 * - healthy: its last attempt succeeded;
 * - failing: 1 to WEBHOOKS_FAILURES_BEFORE_PAUSE - 1 attempts failed in a row (a slow answer is
 *   no failure: it costs the receiver slots, lane-pace.ts);
 * - paused: none of its deliveries is attempted until `pausedUntil`;
 * - probe-due: its pause is over; one attempt, the probe, may start;
 * - probing: the probe is under way.
 */
export type ReceiverCondition =
  | 'healthy'
  | 'failing'
  | 'paused'
  | 'probe-due'
  | 'probing';

export function conditionOf(
  receiver: ReceiverState,
  now: Date,
): ReceiverCondition {
  if (receiver.probeUntil !== null && receiver.probeUntil > now) {
    return 'probing';
  }
  if (receiver.pausedUntil !== null) {
    return receiver.pausedUntil > now ? 'paused' : 'probe-due';
  }
  return receiver.consecutiveFailures > 0 ? 'failing' : 'healthy';
}

type PauseConfig = Pick<WebhooksConfig, 'pauseMs' | 'retryMaxDelayMs'>;

/** The pause after `level` failed probes: WEBHOOKS_PAUSE doubled each time, capped. */
export function pauseLength(level: number, config: PauseConfig): number {
  return Math.min(
    config.pauseMs * 2 ** Math.min(level, 30),
    Math.max(config.pauseMs, config.retryMaxDelayMs),
  );
}

/** Paused at `now`, after `level` failed probes: the next epoch. */
export function pausedState(
  receiver: ReceiverState,
  level: number,
  now: Date,
  config: PauseConfig,
): ReceiverState {
  return {
    ...receiver,
    pausedUntil: new Date(now.getTime() + pauseLength(level, config)),
    pauseLevel: level,
    probeUntil: null,
    epoch: receiver.epoch + 1,
  };
}

/** One probe under way until `until`: the next epoch, which its outcome alone may end. */
export function probingState(
  receiver: ReceiverState,
  until: Date,
): ReceiverState {
  return { ...receiver, probeUntil: until, epoch: receiver.epoch + 1 };
}

/** A probe succeeded: every delivery may go again. */
export function resumedState(receiver: ReceiverState): ReceiverState {
  return {
    consecutiveFailures: 0,
    pausedUntil: null,
    pauseLevel: 0,
    probeUntil: null,
    epoch: receiver.epoch + 1,
  };
}

/** A new subscription's receiver. */
export const FRESH_RECEIVER: ReceiverState = {
  consecutiveFailures: 0,
  pausedUntil: null,
  pauseLevel: 0,
  probeUntil: null,
  epoch: 0,
};
