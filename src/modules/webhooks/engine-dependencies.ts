import type { WebhooksConfig } from './webhooks.config';
import type { ClaimedDelivery, DeliveryStore } from './delivery-store';
import type { AttemptOutcome, WebhookMessage } from './webhook-sender';

export type EngineConfig = Pick<
  WebhooksConfig,
  | 'timeoutMs'
  | 'slowMs'
  | 'retryBaseMs'
  | 'retryMaxDelayMs'
  | 'retryWindowMs'
  | 'maxInFlight'
  | 'maxInFlightPerSubscription'
  | 'failuresBeforePause'
  | 'pauseMs'
>;

/** A change of a receiver's state, told once, by the instance whose attempt made it. */
export type ReceiverChange =
  | { to: 'failing'; subscriptionId: string; error: string }
  | { to: 'healthy'; subscriptionId: string }
  | {
      to: 'paused';
      subscriptionId: string;
      from: Date;
      until: Date;
      failedProbes: number;
      error: string;
    }
  | { to: 'probing'; subscriptionId: string; deliveryId: string }
  | { to: 'resumed'; subscriptionId: string };

/** What the dispatcher tells its surroundings: the log lines and the metrics. */
export interface DispatchObserver {
  receiverChanged(change: ReceiverChange): void;
  attempted(
    delivery: ClaimedDelivery,
    outcome: AttemptOutcome,
    retryAt: Date | undefined,
  ): void;
  settled(outcome: 'delivered' | 'failed'): void;
  /** An attempt that could not be carried through (the database failed it); not on shutdown. */
  attemptFailed(delivery: ClaimedDelivery, error: unknown): void;
}

/** Which attempt a request is, for its trace. */
export interface AttemptContext {
  subscriptionId: string;
  /** 1 for the first. */
  number: number;
}

export interface EngineDependencies {
  store: DeliveryStore;
  send: (
    message: WebhookMessage,
    signal: AbortSignal,
    attempt: AttemptContext,
  ) => Promise<AttemptOutcome>;
  /** Milliseconds since the epoch: Date.now, or the simulation's clock. */
  now: () => number;
  config: EngineConfig;
  observer: DispatchObserver;
  /** A claim's token, unique to the attempt. */
  token?: () => string;
  random?: () => number;
  /** Aborted on shutdown: attempts under way stop, and no new one starts. */
  signal: AbortSignal;
  /** While true, no attempt claimed ahead starts: the store is moving (StoreFenceService). */
  fenced?: () => boolean;
  /** Waits `ms`: a timer (the default), or the simulation's clock. */
  sleep?: (ms: number) => Promise<void>;
}
