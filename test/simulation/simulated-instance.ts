import type { WebhooksConfig } from '../../src/modules/webhooks/webhooks.config';
import { DeliveryEngine } from '../../src/modules/webhooks/delivery-engine';
import {
  type DispatchObserver,
  type EngineConfig,
  type EngineDependencies,
} from '../../src/modules/webhooks/engine-dependencies';
import { DispatchLoop } from '../../src/modules/webhooks/dispatch-loop';
import { FRESH_RECEIVER } from '../../src/modules/webhooks/receiver-state';
import type { AttemptOutcome } from '../../src/modules/webhooks/webhook-sender';
import {
  MemoryDeliveryStore,
  type MemoryDatabase,
  type StoreHooks,
} from './memory-delivery-store';
import type { World } from './world';

/** The settings of every simulated instance: the defaults scaled down, times in ms. */
export const SIMULATED: EngineConfig & Pick<WebhooksConfig, 'pollIntervalMs'> =
  {
    timeoutMs: 1000,
    slowMs: 500,
    retryBaseMs: 200,
    retryMaxDelayMs: 4000,
    // longer than any run: nothing is given up, so every event must arrive
    retryWindowMs: 3_600_000,
    pollIntervalMs: 100,
    maxInFlight: 8,
    maxInFlightPerSubscription: 2,
    failuresBeforePause: 3,
    pauseMs: 1000,
  };

/** The longest a simulated statement waits before, and again after, its work. */
export const STATEMENT_WAIT_MS = 3;

/**
 * A simulated instance: the dispatcher's own engine and loop on `db`, living in `world` as
 * `owner` (its timers, its waits), with the simulated settings. Each statement waits up to
 * STATEMENT_WAIT_MS before and after its work; `storeHooks` hear of the rest. The observer's
 * calls that a run does not pass are ignored; `onPollError` hears of every failed poll. The
 * engine is returned before its first poll, which the world runs later: a run may still wrap
 * its `poll`.
 */
export function startSimulatedInstance({
  world,
  owner,
  db,
  storeHooks = {},
  send,
  random,
  observer = {},
  onPollError,
  fenced,
}: {
  world: World;
  owner: string;
  db: MemoryDatabase;
  storeHooks?: Partial<Omit<StoreHooks, 'around'>>;
  send: EngineDependencies['send'];
  random: () => number;
  observer?: Partial<DispatchObserver>;
  onPollError: (error: unknown) => void;
  fenced?: () => boolean;
}): DeliveryEngine {
  const store = new MemoryDeliveryStore(db, {
    around: () =>
      world.delay(owner, Math.floor(random() * (STATEMENT_WAIT_MS + 1))),
    record: () => undefined,
    ...storeHooks,
  });
  const engine = new DeliveryEngine({
    store,
    send,
    now: () => world.now,
    config: SIMULATED,
    observer: {
      receiverChanged: () => undefined,
      attempted: () => undefined,
      settled: () => undefined,
      attemptFailed: () => undefined,
      ...observer,
    },
    random,
    signal: new AbortController().signal,
    sleep: (ms) => world.delay(owner, ms),
    fenced,
  });
  new DispatchLoop(engine, SIMULATED, {
    timers: world.timersOf(owner),
    intervalMs: SIMULATED.pollIntervalMs,
    onPolled: () => undefined,
    onError: onPollError,
    fenced,
  }).start();
  return engine;
}

/** A subscription of every type, or of `eventTypes`, to the simulated receiver `id`. */
export function subscribeReceiver(
  db: MemoryDatabase,
  id: string,
  eventTypes: string[] | null = null,
): void {
  db.subscribe({
    id,
    url: `http://receivers.example/${id}`,
    secret: 'whsec_c2ltdWxhdGVk',
    eventTypes,
    receiver: { ...FRESH_RECEIVER },
  });
}

/**
 * A receiver's answer, as `owner` waits for it: a 2xx `answerMs` later, or, when that is not
 * within `timeoutMs`, the timeout once it has passed.
 */
export async function answerAfter(
  world: World,
  owner: string,
  answerMs: number,
  { timeoutMs, statusCode }: { timeoutMs: number; statusCode: number },
): Promise<AttemptOutcome> {
  if (answerMs >= timeoutMs) {
    await world.delay(owner, timeoutMs);
    return {
      delivered: false,
      result: 'timeout',
      error: 'no answer within the timeout',
    };
  }
  await world.delay(owner, answerMs);
  return { delivered: true, result: 'success', statusCode, answerMs };
}
