import type { EngineConfig } from '../../src/modules/webhooks/engine-dependencies';
import { spareSlots } from '../../src/modules/webhooks/delivery-slots';
import type {
  AttemptOutcome,
  WebhookMessage,
} from '../../src/modules/webhooks/webhook-sender';
import { MemoryDatabase } from './memory-delivery-store';
import { pollBound } from './scenario';
import {
  answerAfter,
  SIMULATED,
  startSimulatedInstance,
  STATEMENT_WAIT_MS,
  subscribeReceiver,
} from './simulated-instance';
import { integersBetween } from '../helpers/seeded-random';
import { seededRandom, World } from './world';

/** What a receiver beside the healthy one does with every request. */
export type UnhealthyKind = 'slow' | 'hanging' | 'flapping' | 'dead';

export interface FairnessReport {
  seed: number;
  violations: string[];
  /** The unhealthy receivers beside the healthy one. */
  beside: UnhealthyKind[];
  /** The longest an event waited, from its commit to reaching the healthy receiver. */
  longestDelayMs: number;
  /** Requests the unhealthy receivers got: they were served too. */
  unhealthyRequests: number;
}

/** The longest a simulated statement takes: its waits before and after its work. */
const STATEMENT_MS = 2 * STATEMENT_WAIT_MS;

/** The longest a simulated request takes to reach a receiver, and a healthy one to answer. */
const SEND_MS = 5;
const HEALTHY_ANSWER_MS = 25;

/**
 * The delay bound of a quick receiver's event (docs/decisions.md, "Webhook delivery"): the
 * event gets its place in the log at the first poll that begins after its commit, at most a
 * poll interval and the poll under way later; that poll starts its attempt, a spare slot being
 * free; then the request takes what sending and the receiver take. Unless more receivers than
 * there are spare slots turned unhealthy within one timeout before: then the spare slots are
 * free again once their attempts time out, a timeout later at most.
 */
export function healthyDelayBound(
  config: EngineConfig & { pollIntervalMs: number },
  lanes: number,
  { turnedMeanwhile = 0 } = {},
): number {
  const poll = pollBound(lanes, config).statements * STATEMENT_MS;
  const bound = config.pollIntervalMs + 2 * poll + SEND_MS + HEALTHY_ANSWER_MS;
  return turnedMeanwhile > spareSlots(config.maxInFlight)
    ? bound + config.timeoutMs
    : bound;
}

const START = Date.UTC(2026, 10, 29);

/**
 * One seeded run of fairness: one to three instances, no crash, a healthy receiver that
 * answers within 25 ms, and two to six unhealthy ones beside it (slow, just under the timeout
 * or anywhere below it; hanging past it; flapping; dead), each owed a backlog of events from
 * the start, then an event every 50 ms (20 a second) for 15 s, which the healthy one gets too. Every event must
 * reach the healthy receiver within healthyDelayBound of its commit, whatever the others do.
 */
export async function simulateFairness(seed: number): Promise<FairnessReport> {
  const random = seededRandom(seed);
  const between = integersBetween(random);
  const pick = <T>(items: readonly T[]): T =>
    items[Math.floor(random() * items.length)];
  const world = new World(random, START);
  const db = new MemoryDatabase();
  const config = SIMULATED;
  const violations: string[] = [];
  // the healthy receiver is subscribed, then events come steadily
  const steadyFrom = START + 2 * config.timeoutMs;
  const steadyUntil = steadyFrom + 15_000;

  // half the runs: four to six of one kind, enough to hold every slot they are let; the
  // others a mix, slow ones most often
  const kinds: UnhealthyKind[] = ['slow', 'hanging', 'flapping', 'dead'];
  const beside: UnhealthyKind[] =
    random() < 0.5
      ? Array<UnhealthyKind>(between(4, 6)).fill(pick(kinds))
      : Array.from({ length: between(2, 6) }, () =>
          pick<UnhealthyKind>(['slow', 'slow', 'slow', ...kinds]),
        );
  // slow: every answer just under the time past which slowness used to count as a failure,
  // or anywhere from it to just under the timeout
  const slowMs = pick([
    between(config.slowMs - 100, config.slowMs - 10),
    between(config.slowMs, config.timeoutMs - 50),
  ]);
  const received = new Map<string, { eventId: string; at: number }[]>();
  /** When each unhealthy receiver turned unhealthy. */
  const turns: number[] = [];
  const answerOf = new Map<string, (now: number) => number | 'refused'>();
  const subscribe = (
    id: string,
    answer: (now: number) => number | 'refused',
  ) => {
    subscribeReceiver(db, id);
    received.set(id, []);
    answerOf.set(id, answer);
  };
  // subscribed once the backlog has its places: the backlog is the others' alone
  world.schedule(START + config.timeoutMs, 'client', () =>
    subscribe('healthy', () => between(1, HEALTHY_ANSWER_MS)),
  );
  beside.forEach((kind, index) => {
    const period = between(300, 2000);
    // each turns unhealthy at a moment of its own, some while the healthy one is being served
    const turnsAt = between(START, steadyFrom + 5000);
    turns.push(turnsAt);
    subscribe(`${kind}-${index}`, (now) => {
      if (now < turnsAt) return between(1, 25);
      switch (kind) {
        case 'slow':
          return slowMs;
        case 'hanging':
          return 3 * config.timeoutMs;
        case 'flapping':
          return Math.floor((now - START) / period) % 2 === 0 ? 'refused' : 5;
        case 'dead':
          return 'refused';
      }
    });
  });

  const deliveryEvents = (subscriptionId: string, deliveryId: string) =>
    db.deliveries.get(deliveryId)?.eventId ??
    `${subscriptionId}: unknown delivery ${deliveryId}`;

  const instances = between(1, 3);
  for (let slot = 0; slot < instances; slot += 1) {
    const owner = `instance-${slot}`;
    const send = async (message: WebhookMessage): Promise<AttemptOutcome> => {
      await world.delay(owner, between(0, SEND_MS));
      const id = message.url.slice(message.url.lastIndexOf('/') + 1);
      const answer = answerOf.get(id)!(world.now);
      if (answer === 'refused') {
        await world.delay(owner, 1);
        return {
          delivered: false,
          result: 'network_error',
          error: 'connection refused',
        };
      }
      received
        .get(id)!
        .push({ eventId: deliveryEvents(id, message.id), at: world.now });
      return answerAfter(world, owner, answer, {
        timeoutMs: config.timeoutMs,
        statusCode: 200,
      });
    };
    startSimulatedInstance({
      world,
      owner,
      db,
      send,
      random,
      observer: {
        attemptFailed: (delivery, error) =>
          violations.push(
            `an attempt at ${delivery.id} failed: ${String(error)}`,
          ),
      },
      onPollError: (error) =>
        violations.push(`a poll of ${owner} failed: ${String(error)}`),
    });
  }

  // a backlog owed to every receiver, then 20 events a second
  const committedAt = new Map<string, number>();
  let events = 0;
  const write = () => {
    events += 1;
    const id = `evt_${events}`;
    committedAt.set(id, world.now);
    db.writeEvent({
      id,
      type: 'plant.added',
      payload: `{"id":${events},"name":"Plant ${events}"}`,
      createdAt: new Date(world.now),
    });
  };
  const backlog = between(20, 200);
  world.schedule(START, 'client', () => {
    for (let i = 0; i < backlog; i += 1) write();
  });
  for (let at = steadyFrom; at < steadyUntil; at += 50) {
    world.schedule(at, 'client', write);
  }
  await world.runUntil(steadyUntil + 2 * config.timeoutMs);

  // every steady event reached the healthy receiver within the bound
  const lanes = beside.length + 1;
  const firstArrival = new Map<string, number>();
  for (const { eventId, at } of received.get('healthy') ?? []) {
    if (!firstArrival.has(eventId)) firstArrival.set(eventId, at);
  }
  let longestDelayMs = 0;
  for (const [eventId, at] of committedAt) {
    if (at < steadyFrom) continue;
    const arrived = firstArrival.get(eventId);
    if (arrived === undefined) {
      violations.push(`the healthy receiver never got ${eventId}`);
      continue;
    }
    const delay = arrived - at;
    longestDelayMs = Math.max(longestDelayMs, delay);
    const since = at - config.timeoutMs - healthyDelayBound(config, lanes);
    const bound = healthyDelayBound(config, lanes, {
      turnedMeanwhile: turns.filter((turn) => turn > since && turn <= arrived)
        .length,
    });
    if (delay > bound) {
      violations.push(
        `the healthy receiver got ${eventId} ${delay} ms after its commit, beside ${beside.join(', ')} (${instances} instance${instances > 1 ? 's' : ''}), past its bound of ${bound} ms`,
      );
    }
  }
  let unhealthyRequests = 0;
  for (const [id, requests] of received) {
    if (id !== 'healthy') unhealthyRequests += requests.length;
  }
  return { seed, violations, beside, longestDelayMs, unhealthyRequests };
}
