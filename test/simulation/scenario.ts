import { SEQUENCE_BATCH } from '../../src/modules/webhooks/delivery-engine';
import { SCAN_PER_LANE } from '../../src/modules/webhooks/lane-work';
import {
  type EngineConfig,
  type ReceiverChange,
} from '../../src/modules/webhooks/engine-dependencies';
import {
  CLAIM_MARGIN_MS,
  RECORDING_MARGIN_MS,
} from '../../src/modules/webhooks/lane-pace';
import { PENDING_CAP_FACTOR } from '../../src/modules/webhooks/delivery-store';
import type { ReceiverState } from '../../src/modules/webhooks/delivery-store';
import {
  conditionOf,
  pauseLength,
} from '../../src/modules/webhooks/receiver-state';
import type {
  AttemptOutcome,
  WebhookMessage,
} from '../../src/modules/webhooks/webhook-sender';
import { STALL_MS } from '../../src/modules/webhooks/webhook-sender';
import { MemoryDatabase, type StoreCall } from './memory-delivery-store';
import {
  SIMULATED,
  startSimulatedInstance,
  subscribeReceiver,
} from './simulated-instance';
import { integersBetween } from '../helpers/seeded-random';
import { seededRandom, World } from './world';

const EVENT_TYPES = ['plant.added', 'plant.deleted'];

/**
 * How each simulated receiver behaves while the run is rough; in the calm that ends every run
 * all but the dead ones answer at once.
 */
export type ReceiverKind =
  | 'healthy'
  | 'dead'
  | 'flapping'
  | 'slow'
  | 'filtered'
  | 'hanging';

/** A subscription's receiver's answer to one request, at one moment. */
type Answer =
  | { kind: 'refused' }
  | { kind: 'status'; status: number; afterMs: number };

interface SimulatedReceiver {
  id: string;
  kind: ReceiverKind;
  eventTypes: string[] | null;
  /** Simulated times at which a flapping receiver goes down and comes up again. */
  outages: [number, number][];
  /** Each request, as it arrived. */
  received: { id: string; type: string; at: number }[];
  answer(now: number, calm: boolean): Answer;
}

export interface RunReport {
  seed: number;
  violations: string[];
  events: number;
  requests: number;
  polls: number;
  crashes: number;
  freezes: number;
  pauses: number;
  /** The longest a receiver took, from the calm's start, to get its first delivery back. */
  longestResumeMs: number;
  /** The receivers' changes, with SIMULATION_LOG set. */
  log?: unknown[];
}

/** The bound on a poll's statements and rows, for a poll that saw `lanes` subscriptions. */
export function pollBound(lanes: number, config: EngineConfig) {
  const cap = PENDING_CAP_FACTOR * config.maxInFlightPerSubscription;
  return {
    // the sequencing, the subscriptions, the claims and the events; up to four per lane
    statements: 4 + 4 * lanes,
    rows:
      SEQUENCE_BATCH +
      1 +
      lanes +
      // per lane: its due deliveries twice, its pending ones counted up to its cap, the places
      // it looked at and what it made
      lanes *
        (SCAN_PER_LANE + 1 + 2 * cap + 2 * config.maxInFlightPerSubscription) +
      2 * config.maxInFlight,
  };
}

const START = Date.UTC(2026, 10, 28);

/**
 * One seeded run: instances polling one in-memory database; a client writing events; receivers
 * healthy, dead, flapping, slow, filtered or hanging; instances crashing and coming back, and
 * freezing; then a calm in which every receiver but the dead ones answers at once. Returns
 * every invariant the run broke, and what it did.
 */
export async function simulate(seed: number): Promise<RunReport> {
  const random = seededRandom(seed);
  const pick = <T>(items: readonly T[]): T =>
    items[Math.floor(random() * items.length)];
  const between = integersBetween(random);
  const world = new World(random, START);
  const db = new MemoryDatabase();
  const config = SIMULATED;
  const roughMs = 15_000;
  const calmMs = 15_000;
  const calmAt = START + roughMs;
  const violations: string[] = [];
  /** The receivers' changes as logged (a line is lost when its instance dies first). */
  const changes: (ReceiverChange & { at: number })[] = [];
  /** The receivers' changes as committed, with their states before and after. */
  const committed: {
    subscriptionId: string;
    before: ReceiverState;
    after: ReceiverState;
    at: number;
  }[] = [];
  let polls = 0;
  let crashes = 0;
  let freezes = 0;

  // receivers: a healthy one always, then a seeded mix
  const kinds: ReceiverKind[] = [
    'healthy',
    ...Array.from({ length: between(2, 5) }, () =>
      pick<ReceiverKind>([
        'healthy',
        'dead',
        'flapping',
        'slow',
        'filtered',
        'hanging',
      ]),
    ),
  ];
  const receivers = new Map<string, SimulatedReceiver>();
  kinds.forEach((kind, index) => {
    const id = `sub-${index}-${kind}`;
    const outages: [number, number][] = [];
    for (let at = START + between(0, 3000); at < calmAt; ) {
      const until = Math.min(calmAt, at + between(300, 4000));
      outages.push([at, until]);
      at = until + between(300, 4000);
    }
    const downAnswer: Answer = pick<Answer>([
      { kind: 'refused' },
      { kind: 'status', status: 500, afterMs: 5 },
      { kind: 'status', status: 503, afterMs: 50 },
    ]);
    const slowMs = between(config.slowMs + 50, config.timeoutMs - 100);
    const receiver: SimulatedReceiver = {
      id,
      kind,
      eventTypes: kind === 'filtered' ? ['plant.deleted'] : null,
      outages,
      received: [],
      answer(now, calm) {
        const fast: Answer = {
          kind: 'status',
          status: 204,
          afterMs: between(1, 20),
        };
        switch (kind) {
          case 'dead':
            return { kind: 'refused' };
          case 'flapping':
            return !calm &&
              outages.some(([from, to]) => now >= from && now < to)
              ? downAnswer
              : fast;
          case 'slow':
            return calm
              ? fast
              : { kind: 'status', status: 200, afterMs: slowMs };
          case 'hanging':
            // answers later than the timeout while rough
            return calm
              ? fast
              : { kind: 'status', status: 200, afterMs: config.timeoutMs * 3 };
          default:
            return fast;
        }
      },
    };
    receivers.set(id, receiver);
    subscribeReceiver(db, id, receiver.eventTypes);
  });
  const receiverOf = (url: string) =>
    receivers.get(url.slice(url.lastIndexOf('/') + 1))!;

  // what was claimed, sent and taken back, to hold the count of attempts to the requests
  interface Claim {
    owner: string;
    token: string;
    at: number;
    /** When the claim runs out. */
    until: number;
    delivery: string;
    tried: boolean;
    withdrawn: boolean;
    /** Its receiver as stored when it was claimed. */
    receiver: ReceiverState;
    subscriptionId: string;
  }
  const claims: Claim[] = [];

  let requests = 0;
  const instanceCount = between(1, 3);
  const owners: string[] = [];

  /** A fresh instance in slot `slot`: its engine, its loop, its own view of the database. */
  const startInstance = (slot: number, incarnation: number) => {
    const owner = `instance-${slot}-${incarnation}`;
    owners[slot] = owner;
    const pollCalls: StoreCall[] = [];
    let inPoll = false;
    const lastClaim = (delivery: string) =>
      claims.findLast(
        (claim) => claim.owner === owner && claim.delivery === delivery,
      );
    const send = async (message: WebhookMessage): Promise<AttemptOutcome> => {
      const started = world.now;
      // a request sent later could be answered too late for its outcome to be recorded
      // within its claim, and be sent again by whoever claims it next
      const { until } = lastClaim(message.id)!;
      if (until - started < config.timeoutMs + RECORDING_MARGIN_MS) {
        violations.push(
          `${message.id} was sent by ${owner} at ${started - START} ms with ${until - started} ms of its claim left, less than the timeout and RECORDING_MARGIN_MS`,
        );
      }
      // resolving and connecting: a frozen instance may come back past its timeout
      await world.delay(owner, between(0, 5));
      if (world.now - started > config.timeoutMs + STALL_MS) {
        return {
          delivered: false,
          result: 'timeout',
          error: 'no answer within the timeout',
          abandoned: true,
        };
      }
      const receiver = receiverOf(message.url);
      const answer = receiver.answer(world.now, world.now >= calmAt);
      requests += 1;
      lastClaim(message.id)!.tried = true;
      if (answer.kind === 'refused') {
        await world.delay(owner, 1);
        return {
          delivered: false,
          result: 'network_error',
          error: 'connection refused',
        };
      }
      receiver.received.push({
        id: message.id,
        type: message.type,
        at: world.now,
      });
      if (answer.afterMs >= config.timeoutMs) {
        await world.delay(owner, config.timeoutMs);
        return {
          delivered: false,
          result: 'timeout',
          error: 'no answer within the timeout',
        };
      }
      await world.delay(owner, answer.afterMs);
      return answer.status < 300
        ? {
            delivered: true,
            result: 'success',
            statusCode: answer.status,
            answerMs: answer.afterMs,
          }
        : {
            delivered: false,
            result: 'http_error',
            statusCode: answer.status,
            error: `the receiver answered ${answer.status}`,
          };
    };
    const engine = startSimulatedInstance({
      world,
      owner,
      db,
      storeHooks: {
        record: (call) => {
          if (call.poll && inPoll) pollCalls.push(call);
        },
        claimed: (ids, token) => {
          for (const delivery of ids) {
            const { subscriptionId } = db.deliveries.get(delivery)!;
            claims.push({
              owner,
              token,
              at: world.now,
              until: db.deliveries.get(delivery)!.claimedUntil!.getTime(),
              delivery,
              tried: false,
              withdrawn: false,
              receiver: { ...db.subscriptions.get(subscriptionId)!.receiver },
              subscriptionId,
            });
          }
        },
        takenBack: ({ id, token }) => {
          claims.find(
            (claim) => claim.token === token && claim.delivery === id,
          )!.withdrawn = true;
        },
        receiverChanged: (subscriptionId, before, after) =>
          committed.push({
            subscriptionId,
            before: { ...before },
            after: { ...after },
            at: world.now,
          }),
      },
      send,
      random,
      observer: {
        receiverChanged: (change) => changes.push({ ...change, at: world.now }),
        attemptFailed: (delivery, error) =>
          violations.push(
            `an attempt at ${delivery.id} failed: ${String(error)}`,
          ),
      },
      onPollError: (error) =>
        violations.push(`a poll of ${owner} failed: ${String(error)}`),
    });
    const poll = engine.poll.bind(engine);
    engine.poll = async (onAttemptEnd) => {
      pollCalls.length = 0;
      inPoll = true;
      try {
        return await poll(onAttemptEnd);
      } finally {
        inPoll = false;
        polls += 1;
        const bound = pollBound(receivers.size, config);
        const rows = pollCalls.reduce((sum, { rows }) => sum + rows, 0);
        if (pollCalls.length > bound.statements || rows > bound.rows) {
          violations.push(
            `a poll of ${owner} at ${world.now - START} ms made ${pollCalls.length} calls touching ${rows} rows, past its bound (${bound.statements}, ${bound.rows})`,
          );
        }
      }
    };
  };
  for (let slot = 0; slot < instanceCount; slot += 1) startInstance(slot, 0);

  // the client: events, each committed with its change
  let eventCount = 0;
  for (let at = START + between(0, 200); at < calmAt; at += between(20, 400)) {
    world.schedule(at, 'client', () => {
      eventCount += 1;
      db.writeEvent({
        id: `evt_${eventCount}`,
        type: pick(EVENT_TYPES),
        payload: `{"id":${eventCount},"name":"Plant ${eventCount}"}`,
        createdAt: new Date(world.now),
      });
    });
  }

  // rough weather: crashes (the instance comes back as a new process) and freezes
  for (
    let at = START + between(500, 4000);
    at < calmAt - 2000;
    at += between(1000, 6000)
  ) {
    world.schedule(at, 'chaos', () => {
      const slot = between(0, instanceCount - 1);
      const owner = owners[slot];
      if (random() < 0.5) {
        crashes += 1;
        world.crash(owner);
        const incarnation = Number(owner.split('-')[2]) + 1;
        world.schedule(world.now + between(100, 1500), 'chaos', () =>
          startInstance(slot, incarnation),
        );
      } else {
        freezes += 1;
        world.freeze(
          owner,
          world.now + between(200, 3 * config.timeoutMs + CLAIM_MARGIN_MS),
        );
      }
    });
  }

  await world.runUntil(calmAt + calmMs);
  const end = world.now;

  // --- invariants ---
  const matches = (receiver: SimulatedReceiver, type: string) =>
    receiver.eventTypes === null || receiver.eventTypes.includes(type);
  const deliveriesOf = (id: string) =>
    [...db.deliveries.values()].filter(
      ({ subscriptionId }) => subscriptionId === id,
    );
  let longestResumeMs = 0;
  for (const receiver of receivers.values()) {
    const own = new Map(
      deliveriesOf(receiver.id).map((delivery) => [delivery.id, delivery]),
    );
    for (const request of receiver.received) {
      const delivery = own.get(request.id);
      if (!delivery) {
        violations.push(
          `${receiver.id} got ${request.id}, no delivery of its own`,
        );
      } else if (!matches(receiver, request.type)) {
        violations.push(
          `${receiver.id} got a ${request.type} event, which it does not receive`,
        );
      }
    }
    if (receiver.kind === 'dead') continue;
    const got = new Set(
      receiver.received.map(({ id }) => own.get(id)?.eventId),
    );
    const missing = db.events.filter(
      (event) => matches(receiver, event.type) && !got.has(event.id),
    );
    if (missing.length > 0) {
      violations.push(
        `${receiver.id} (${receiver.kind}) never got ${missing.length} of its events, ${missing[0].id} first`,
      );
    }
    if (receiver.kind === 'healthy' || receiver.kind === 'filtered') {
      const givenUp = [...own.values()].filter(
        ({ status }) => status === 'failed',
      );
      if (givenUp.length > 0) {
        violations.push(
          `${receiver.id} (${receiver.kind}) had ${givenUp.length} deliveries given up`,
        );
      }
      if (
        committed.some(
          ({ subscriptionId, after }) =>
            subscriptionId === receiver.id && after.pausedUntil !== null,
        )
      ) {
        violations.push(`${receiver.id} (${receiver.kind}) was paused`);
      }
    }
    // back in the calm: its first delivery within its longest pause, a claim and two polls
    const owedAtCalm = db.events.some(
      (event) =>
        matches(receiver, event.type) &&
        !receiver.received.some(
          ({ id, at }) => at < calmAt && own.get(id)?.eventId === event.id,
        ),
    );
    const firstInCalm = receiver.received.find(({ at }) => at >= calmAt);
    if (owedAtCalm && firstInCalm) {
      longestResumeMs = Math.max(longestResumeMs, firstInCalm.at - calmAt);
      const bound =
        config.retryMaxDelayMs +
        2 * (config.timeoutMs + CLAIM_MARGIN_MS) +
        2 * config.pollIntervalMs;
      if (firstInCalm.at - calmAt > bound) {
        violations.push(
          `${receiver.id} (${receiver.kind}) got its first delivery ${firstInCalm.at - calmAt} ms into the calm, past ${bound} ms`,
        );
      }
    }
  }

  // pauses follow the schedule: a pause begins at the first level after failures, each one
  // after a failed probe is one level up, and probes come only once a pause is over
  for (const { subscriptionId, before, after, at } of committed) {
    const where = `${subscriptionId} at ${at - START} ms`;
    if (after.epoch !== before.epoch + 1) {
      violations.push(
        `${where}: a change from epoch ${before.epoch} to ${after.epoch}`,
      );
    }
    if (after.probeUntil !== null) {
      if (before.pausedUntil === null || before.pausedUntil.getTime() > at) {
        violations.push(`${where}: probed while not due for a probe`);
      }
    } else if (after.pausedUntil !== null) {
      const probed = before.probeUntil !== null;
      if (!probed && before.pausedUntil !== null) {
        violations.push(`${where}: paused again without a probe`);
      }
      const expected = probed ? before.pauseLevel + 1 : 0;
      if (after.pauseLevel !== expected) {
        violations.push(
          `${where}: paused at level ${after.pauseLevel}, not ${expected}`,
        );
      }
      if (!probed && before.consecutiveFailures < config.failuresBeforePause) {
        violations.push(
          `${where}: paused after ${before.consecutiveFailures} failures in a row`,
        );
      }
    } else if (before.probeUntil === null) {
      violations.push(`${where}: resumed without a probe`);
    }
  }
  // and each logged pause lasts what its level says, from the attempt that caused it
  for (const change of changes) {
    if (change.to !== 'paused') continue;
    const length = change.until.getTime() - change.from.getTime();
    if (length !== pauseLength(change.failedProbes, config)) {
      violations.push(
        `${change.subscriptionId} paused for ${length} ms, not ${pauseLength(change.failedProbes, config)}`,
      );
    }
  }

  // a pause stops its receiver's attempts from the moment it is stored: none is claimed
  // while paused, and one alone, the probe, while probing
  const probes = new Set<string>();
  for (const { subscriptionId, receiver, at, delivery } of claims) {
    const where = `${delivery} of ${subscriptionId}, claimed at ${at - START} ms`;
    const condition = conditionOf(receiver, new Date(at));
    if (condition === 'paused' || condition === 'probe-due') {
      violations.push(`${where}: claimed while its receiver was ${condition}`);
    } else if (condition === 'probing') {
      const probe = `${subscriptionId} ${receiver.epoch}`;
      if (probes.has(probe)) {
        violations.push(`${where}: a second claim in one probe`);
      }
      probes.add(probe);
    }
  }

  // attempts counted = requests made, less none: a claim whose instance died before sending
  // is the one count that no request follows
  for (const delivery of db.deliveries.values()) {
    const ofIt = claims.filter((claim) => claim.delivery === delivery.id);
    const sent = ofIt.filter(({ tried }) => tried).length;
    const untried = ofIt.filter(({ tried, withdrawn }) => !tried && !withdrawn);
    const lost = untried.filter(({ owner }) => world.isCrashed(owner)).length;
    // an attempt under way when the run ends, claimed within one claim's length
    const underWay = untried.filter(
      ({ owner, at }) =>
        !world.isCrashed(owner) &&
        at > end - (config.timeoutMs + CLAIM_MARGIN_MS),
    ).length;
    if (delivery.attempts !== sent + lost + underWay) {
      violations.push(
        `${delivery.id} counts ${delivery.attempts} attempts for ${sent} requests made, ${lost} claims whose instance died before sending and ${underWay} under way`,
      );
    }
  }

  return {
    seed,
    violations,
    log: process.env.SIMULATION_LOG
      ? changes.map((change) => ({ ...change, at: change.at - START }))
      : undefined,
    events: eventCount,
    requests,
    polls,
    crashes,
    freezes,
    pauses: committed.filter(
      ({ after }) => after.pausedUntil !== null && after.probeUntil === null,
    ).length,
    longestResumeMs,
  };
}
