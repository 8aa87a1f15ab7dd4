import type { AttemptOutcome } from '../../src/modules/webhooks/webhook-sender';
import { MemoryDatabase } from './memory-delivery-store';
import {
  answerAfter,
  SIMULATED,
  STATEMENT_WAIT_MS,
  startSimulatedInstance,
  subscribeReceiver,
} from './simulated-instance';
import { integersBetween } from '../helpers/seeded-random';
import { seededRandom, World } from './world';

export interface FenceReport {
  seed: number;
  violations: string[];
  /** Attempts claimed ahead when the fence went up, and given back unsent. */
  givenBack: number;
}

/**
 * How long after its instances see a store's fence (a move, docs/operations.md) a delivery may
 * still be claimed: an attempt sent before it runs to its timeout and records its outcome (a
 * statement); what was claimed ahead is given back at the loop's next look (a statement).
 * Past it, the move finds nothing under way.
 */
export const FENCE_QUIET_MS =
  Math.max(SIMULATED.timeoutMs, SIMULATED.pollIntervalMs) +
  2 * STATEMENT_WAIT_MS;

const START = Date.UTC(2026, 0, 1);

/**
 * Instances delivering to quick receivers, so that their lanes claim ahead; then the receivers
 * turn slow (the move test's receiver) and the store's fence goes up, as a move puts it;
 * later it comes down, as when a move is abandoned. Checks that no request starts while the
 * fence is up, that nothing is claimed FENCE_QUIET_MS after it went up, and that every event
 * is delivered once it is down.
 */
export async function simulateFence(seed: number): Promise<FenceReport> {
  const random = seededRandom(seed);
  const between = integersBetween(random);
  const world = new World(random, START);
  const db = new MemoryDatabase();
  const violations: string[] = [];

  const receivers = Array.from(
    { length: between(1, 3) },
    (_, index) => `receiver-${index}`,
  );
  for (const receiver of receivers) subscribeReceiver(db, receiver);

  const fenceAt = START + between(1500, 3500);
  const unfenceAt = fenceAt + FENCE_QUIET_MS + between(100, 2000);
  const fenced = () => world.now >= fenceAt && world.now < unfenceAt;
  const slowFrom = fenceAt - SIMULATED.timeoutMs;
  let givenBack = 0;
  for (let slot = 0; slot < between(1, 3); slot += 1) {
    const owner = `instance-${slot}`;
    startSimulatedInstance({
      world,
      owner,
      db,
      fenced,
      send: async (message): Promise<AttemptOutcome> => {
        if (fenced()) {
          violations.push(
            `${owner} sent ${message.id} at ${world.now - START} ms, while the fence was up (${fenceAt - START} to ${unfenceAt - START} ms)`,
          );
        }
        // slow from a timeout before the fence, so that attempts in flight as it goes up
        // run long, some to their timeout
        const answerMs =
          world.now >= slowFrom && world.now < unfenceAt
            ? between(SIMULATED.timeoutMs / 2, (3 * SIMULATED.timeoutMs) / 2)
            : between(20, 30);
        return answerAfter(world, owner, answerMs, {
          timeoutMs: SIMULATED.timeoutMs,
          statusCode: 204,
        });
      },
      storeHooks: {
        takenBack: () => {
          if (fenced()) givenBack += 1;
        },
      },
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

  let written = 0;
  for (let at = START + 100; at < unfenceAt + 500; at += between(2, 15)) {
    written += 1;
    const id = written;
    world.schedule(at, 'client', () =>
      db.writeEvent({
        id: `evt_${id}`,
        type: 'plant.added',
        payload: `{"id":${id},"name":"Plant ${id}"}`,
        createdAt: new Date(world.now),
      }),
    );
  }

  world.schedule(fenceAt + FENCE_QUIET_MS, 'client', () => {
    const claimed = [...db.deliveries.values()].filter(
      ({ claimToken }) => claimToken !== null,
    );
    if (claimed.length > 0) {
      violations.push(
        `${claimed.length} deliveries were still claimed ${FENCE_QUIET_MS} ms after the fence went up, ${claimed[0].id} among them`,
      );
    }
  });

  await world.runUntil(unfenceAt + 20_000);
  const undelivered = [...db.deliveries.values()].filter(
    ({ status }) => status !== 'delivered',
  );
  if (undelivered.length > 0 || db.deliveries.size === 0) {
    violations.push(
      `${undelivered.length} of ${db.deliveries.size} deliveries were not delivered once the fence came down`,
    );
  }
  const expected = written * receivers.length;
  if (db.deliveries.size !== expected) {
    violations.push(
      `${db.deliveries.size} deliveries were made of ${written} events to ${receivers.length} receivers`,
    );
  }
  return { seed, violations, givenBack };
}
