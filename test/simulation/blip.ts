import type {
  AttemptOutcome,
  WebhookMessage,
} from '../../src/modules/webhooks/webhook-sender';
import { MemoryDatabase } from './memory-delivery-store';
import { RECORD_RETRY_MAX_MS } from '../../src/modules/webhooks/delivery-attempts';
import {
  startSimulatedInstance,
  STATEMENT_WAIT_MS,
  subscribeReceiver,
} from './simulated-instance';
import { integersBetween } from '../helpers/seeded-random';
import { seededRandom, World } from './world';

export interface BlipReport {
  seed: number;
  violations: string[];
  /** Answered requests whose outcome a blip held up, and that were recorded all the same. */
  recordedAfterBlip: number;
}

const START = Date.UTC(2026, 10, 30);

/**
 * One seeded run of database blips: one to three instances, two to four receivers that answer
 * within 100 ms, 20 events a second for 10 s, and one to three spells of 100 ms to 2.5 s in
 * which every statement fails (before its change, or after it committed, its answer lost),
 * then a calm. Every event must reach every receiver, and a request the receiver answered must
 * not be sent again unless a blip lasted from its answer to within a retry of its claim's end
 * (docs/decisions.md, "Webhook delivery": recorded once the database answers again).
 */
export async function simulateBlip(seed: number): Promise<BlipReport> {
  const random = seededRandom(seed);
  const between = integersBetween(random);
  const world = new World(random, START);
  const db = new MemoryDatabase();
  const violations: string[] = [];
  const roughUntil = START + 10_000;

  const blips: [number, number][] = [];
  for (let count = between(1, 3); count > 0; count -= 1) {
    const from = between(START + 500, roughUntil - 3000);
    blips.push([from, from + between(100, 2500)]);
  }
  const unavailable = () =>
    blips.some(([from, to]) => world.now >= from && world.now < to);

  const receivers = Array.from({ length: between(2, 4) }, (_, i) => `sub-${i}`);
  for (const id of receivers) {
    subscribeReceiver(db, id);
  }
  /** Every request, with when its answer left the receiver and the claim it was sent under. */
  const requests: {
    receiver: string;
    deliveryId: string;
    answeredAt: number;
    claimedUntil: number;
  }[] = [];
  const claimedUntil = new Map<string, number>();

  const instances = between(1, 3);
  for (let slot = 0; slot < instances; slot += 1) {
    const owner = `instance-${slot}`;
    const send = async (message: WebhookMessage): Promise<AttemptOutcome> => {
      await world.delay(owner, between(0, 5));
      const receiver = message.url.slice(message.url.lastIndexOf('/') + 1);
      const answerMs = between(1, 100);
      const until = claimedUntil.get(message.id)!;
      await world.delay(owner, answerMs);
      requests.push({
        receiver,
        deliveryId: message.id,
        answeredAt: world.now,
        claimedUntil: until,
      });
      return { delivered: true, result: 'success', statusCode: 200, answerMs };
    };
    startSimulatedInstance({
      world,
      owner,
      db,
      storeHooks: {
        unavailable,
        claimed: (ids) => {
          for (const id of ids) {
            claimedUntil.set(
              id,
              db.deliveries.get(id)!.claimedUntil!.getTime(),
            );
          }
        },
      },
      send,
      random,
      // an outcome a blip kept from being recorded past its claim is left to the check of
      // requests sent again, below
      onPollError: (error) => {
        if (!unavailable()) {
          violations.push(`a poll of ${owner} failed: ${String(error)}`);
        }
      },
    });
  }

  let events = 0;
  for (let at = START; at < roughUntil; at += 50) {
    world.schedule(at, 'client', () => {
      // a write during a blip fails with it, and is not an event
      if (unavailable()) return;
      events += 1;
      db.writeEvent({
        id: `evt_${events}`,
        type: 'plant.added',
        payload: `{"id":${events},"name":"Plant ${events}"}`,
        createdAt: new Date(world.now),
      });
    });
  }
  await world.runUntil(roughUntil + 10_000);

  // every event reached every receiver
  for (const receiver of receivers) {
    const got = new Set(
      requests
        .filter((request) => request.receiver === receiver)
        .map(({ deliveryId }) => db.deliveries.get(deliveryId)?.eventId),
    );
    const missing = db.events.filter(({ id }) => !got.has(id));
    if (missing.length > 0) {
      violations.push(
        `${receiver} never got ${missing.length} events, ${missing[0].id} first`,
      );
    }
  }
  // an answered request is sent again only when a blip outlasted what its claim left
  let recordedAfterBlip = 0;
  for (const [index, request] of requests.entries()) {
    const heldUp = blips.some(
      ([from, to]) => from <= request.answeredAt && to > request.answeredAt,
    );
    const again = requests
      .slice(index + 1)
      .find(({ deliveryId }) => deliveryId === request.deliveryId);
    if (!again) {
      if (heldUp) recordedAfterBlip += 1;
      continue;
    }
    // the last try comes a wait at most before the claim's end, and a statement's time
    const excused = blips.some(
      ([from, to]) =>
        from < request.claimedUntil &&
        to > request.claimedUntil - RECORD_RETRY_MAX_MS - 2 * STATEMENT_WAIT_MS,
    );
    if (!excused) {
      violations.push(
        `${request.deliveryId} was answered at ${request.answeredAt - START} ms and sent again at ${again.answeredAt - START} ms, though its claim held until ${request.claimedUntil - START} ms and no blip lasted that long (${blips.map(([from, to]) => `${from - START}-${to - START}`).join(', ')})`,
      );
    }
  }
  return { seed, violations, recordedAfterBlip };
}
