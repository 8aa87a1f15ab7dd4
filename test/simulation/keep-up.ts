import type { AttemptOutcome } from '../../src/modules/webhooks/webhook-sender';
import { MemoryDatabase } from './memory-delivery-store';
import {
  SIMULATED,
  startSimulatedInstance,
  subscribeReceiver,
} from './simulated-instance';
import { seededRandom, World } from './world';

export interface KeepUpReport {
  seed: number;
  violations: string[];
  /** Events a second written, and delivered over the same time. */
  writtenPerSecond: number;
  deliveredPerSecond: number;
  longestDelayMs: number;
}

/** What a request takes to reach the receiver, and the receiver to answer: 25 to 30 ms. */
const SEND_MS = 5;
const ANSWER_MS = 25;

/**
 * The most a quick receiver can be sent a second: each of its slots busy with one request
 * after another. The poll's statements are not in it: they run while the slots are busy.
 */
export function slotRate(): number {
  return (SIMULATED.maxInFlightPerSubscription * 1000) / (SEND_MS + ANSWER_MS);
}

/** Events are written at this share of slotRate: the receiver keeps up, or the log grows. */
export const KEEP_UP_LOAD = 0.9;

/**
 * How late an event may reach a receiver that keeps up: the first poll after its commit (an
 * interval and the poll under way), then what queueing at nine tenths of the slots' rate
 * adds (KEEP_UP_QUEUE_MS, a few requests' time).
 */
export const KEEP_UP_QUEUE_MS = 500;
export const KEEP_UP_BOUND_MS = 2 * SIMULATED.pollIntervalMs + KEEP_UP_QUEUE_MS;

const START = Date.UTC(2026, 10, 29);

/**
 * One seeded run of keeping up: one instance, one quick receiver (answering in 20 to 25 ms),
 * events written steadily for 10 s at KEEP_UP_LOAD of what its slots can take, each
 * statement of the store waiting up to its simulated time. Every event must reach the
 * receiver within KEEP_UP_BOUND_MS of its commit: delivery keeps pace with the writes,
 * whatever a poll costs. Before claiming ahead, each poll's statements stood between a slot
 * coming free and its next request: 47 of the 60 events a second were delivered, and the log
 * grew without bound.
 */
export async function simulateKeepUp(seed: number): Promise<KeepUpReport> {
  const random = seededRandom(seed);
  const world = new World(random, START);
  const db = new MemoryDatabase();
  const violations: string[] = [];
  const arrived = new Map<string, number>();
  subscribeReceiver(db, 'quick');
  const owner = 'instance-0';
  startSimulatedInstance({
    world,
    owner,
    db,
    send: async (message): Promise<AttemptOutcome> => {
      await world.delay(owner, SEND_MS);
      const eventId = db.deliveries.get(message.id)?.eventId ?? message.id;
      if (!arrived.has(eventId)) arrived.set(eventId, world.now);
      const answerMs = ANSWER_MS - Math.floor(random() * 6);
      await world.delay(owner, answerMs);
      return { delivered: true, result: 'success', statusCode: 204, answerMs };
    },
    random,
    observer: {
      attemptFailed: (delivery, error) =>
        violations.push(
          `an attempt at ${delivery.id} failed: ${String(error)}`,
        ),
    },
    onPollError: (error) => violations.push(`a poll failed: ${String(error)}`),
  });

  const writtenPerSecond = Math.floor(KEEP_UP_LOAD * slotRate());
  const from = START + SIMULATED.pollIntervalMs;
  const until = from + 10_000;
  const committedAt = new Map<string, number>();
  for (
    let index = 0;
    index < (writtenPerSecond * (until - from)) / 1000;
    index += 1
  ) {
    const at = from + Math.floor((index * 1000) / writtenPerSecond);
    world.schedule(at, 'client', () => {
      const id = `evt_${index + 1}`;
      committedAt.set(id, world.now);
      db.writeEvent({
        id,
        type: 'plant.added',
        payload: `{"id":${index + 1},"name":"Plant ${index + 1}"}`,
        createdAt: new Date(world.now),
      });
    });
  }
  await world.runUntil(until + 5 * KEEP_UP_BOUND_MS);

  let longestDelayMs = 0;
  let late = 0;
  for (const [eventId, at] of committedAt) {
    const delay = (arrived.get(eventId) ?? Number.POSITIVE_INFINITY) - at;
    longestDelayMs = Math.max(longestDelayMs, delay);
    if (delay > KEEP_UP_BOUND_MS && late++ < 3) {
      violations.push(
        `${eventId} reached the receiver ${delay} ms after its commit, past ${KEEP_UP_BOUND_MS} ms, at ${writtenPerSecond} events a second`,
      );
    }
  }
  const delivered = [...arrived.values()].filter((at) => at <= until).length;
  return {
    seed,
    violations,
    writtenPerSecond,
    deliveredPerSecond: Math.round(delivered / ((until - from) / 1000)),
    longestDelayMs,
  };
}
