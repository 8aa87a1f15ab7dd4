import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import {
  parseLosslessJson,
  stringifyLosslessJson,
} from '../../platform/common/json/lossless-json';
import type { WebhooksConfig } from '../../platform/config/webhooks.config';
import {
  PENDING_CAP_FACTOR,
  type ClaimedDelivery,
  type DeliveryStore,
  type EventToSend,
  type Lane,
  type PendingDelivery,
  type Settlement,
} from './delivery-store';
import {
  conditionOf,
  pausedState,
  probingState,
  resumedState,
} from './receiver-state';
import { fairShare, spareSlots } from './delivery-slots';
import { nextAttemptAt } from './retry-schedule';
import type { AttemptOutcome, WebhookMessage } from './webhook-sender';

/** Events given their place in the log per poll. */
export const SEQUENCE_BATCH = 1000;

/** Places of the log one subscription looks at per poll, whatever their types. */
export const SCAN_PER_LANE = 1000;

/**
 * How long past its timeout a claimed attempt may still be recording its outcome. A claim left
 * by an instance that died is free again after timeout + margin.
 */
export const CLAIM_MARGIN_MS = 2_000;

/**
 * Attempts claimed ahead of a lane's slots, at most, as a multiple of the attempts it may have
 * in flight. A lane claims as many ahead as it is expected to start within half its claim's
 * margin (aheadDepth): each then starts as one of its attempts is answered, not at the next
 * poll, with most of its margin left.
 */
export const CLAIM_AHEAD_FACTOR = 12;

/** The first wait before recording an attempt's outcome again, doubling up to the next. */
const RECORD_RETRY_MS = 100;

/** The longest wait between two tries at recording an attempt's outcome. */
export const RECORD_RETRY_MAX_MS = 1000;

/** How far one answer moves a receiver's recent answer time (an exponential average). */
const ANSWER_TIME_WEIGHT = 0.3;

/** Receivers whose answer times an instance keeps: more than the subscriptions it may have. */
const ANSWER_TIMES_KEPT = 1000;

/** A probe looks for its delivery among every pending one, due or not. */
const ANY_TIME = new Date(8_640_000_000_000_000);

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
  /** Waits `ms`: a timer (the default), or the simulation's clock. */
  sleep?: (ms: number) => Promise<void>;
}

/** An attempt to start: the claimed delivery, and the receiver's epoch it runs in. */
interface Planned {
  delivery: PendingDelivery;
  lane: Lane;
  epoch: number;
  probe: boolean;
  /** A probe's end: claimed past it, it could overlap the next instance's probe. */
  probeUntil?: Date;
}

/** An attempt claimed, with its event, waiting for a slot of its lane. */
interface Ready {
  delivery: ClaimedDelivery;
  lane: Lane;
  event: EventToSend | undefined;
  epoch: number;
  probe: boolean;
  onAttemptEnd?: (replaced: boolean) => void;
}

/**
 * The webhook dispatcher's work, apart from its timers (webhook-dispatcher.service.ts) and its
 * storage (delivery-store.ts), so that the simulation runs this very code against an
 * in-memory store, simulated receivers and a simulated clock (docs/decisions.md, "Webhook
 * delivery").
 *
 * One poll, bounded by construction whatever is stored: the log is given its newest places
 * (SEQUENCE_BATCH events at most); the active subscriptions are read (100 at most); each that
 * may send and has room gets its due deliveries and, when they run out, deliveries made from
 * the next events past its cursor (SCAN_PER_LANE places looked at, at most its cap of pending
 * ones made); the poll's deliveries are claimed and their events read in one statement each.
 * A paused subscription costs a poll nothing; its cursor waits.
 */
export class DeliveryEngine {
  /** Every attempt until its outcome is recorded, by delivery. */
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Attempts holding a slot: sent and not yet answered with success (or failed and not yet recorded). */
  private slotsTaken = 0;
  private readonly inFlightByLane = new Map<string, number>();
  /** Lanes whose failures this instance counted since it last cleared them. */
  private readonly failing = new Set<string>();
  /** Each lane's receiver's recent answer time, in ms, as this instance timed it. */
  private readonly answerTimes = new Map<string, number>();
  /** Attempts claimed ahead, by lane, oldest first (CLAIM_AHEAD_FACTOR). */
  private readonly claimedAhead = new Map<string, Ready[]>();
  /** The attempts a lane may have in flight, as the last poll shared the slots. */
  private readonly allowance = new Map<string, number>();
  private readonly token: () => string;
  private readonly random: () => number;

  constructor(private readonly dependencies: EngineDependencies) {
    this.token =
      dependencies.token ?? (() => randomBytes(12).toString('base64url'));
    this.random = dependencies.random ?? Math.random;
  }

  get attemptsInFlight(): number {
    return this.slotsTaken;
  }

  /** Every attempt under way settled, and those claimed ahead given back. */
  async drained(): Promise<void> {
    await Promise.allSettled([
      ...this.inFlight.values(),
      ...[...this.claimedAhead.keys()].map((laneId) =>
        this.giveBackAhead(laneId),
      ),
    ]);
  }

  private freeSlots(): number {
    return this.dependencies.config.maxInFlight - this.slotsTaken;
  }

  /**
   * One poll: starts the attempts it can and returns once they are started (not finished).
   * `backlog`: it took as much as it could, and more may be waiting. `onAttemptEnd` runs as
   * each attempt ends.
   *
   * Slots are shared so that a quick receiver is never kept waiting by the others
   * (docs/decisions.md, "Webhook delivery"):
   * - `spareSlots` are kept for the first attempt of a lane with none in flight whose receiver
   *   has not failed since its last success and answers within WEBHOOKS_SLOW: every other
   *   attempt, probes included, leaves them free.
   * - Of the lanes with work (attempts in flight here, or deliveries due), none is given more
   *   than the other slots divided among them (fairShare), and a lane's own limit shrinks
   *   with its receiver's answer time (laneLimit).
   */
  async poll(
    onAttemptEnd?: (replaced: boolean) => void,
  ): Promise<{ backlog: boolean }> {
    const { store, signal, config } = this.dependencies;
    if (signal.aborted) return { backlog: false };
    const head = await store.sequence(SEQUENCE_BATCH);
    if (this.freeSlots() <= 0) return { backlog: true };
    const lanes = shuffled(await store.lanes(), this.random);
    const now = new Date(this.dependencies.now());
    await this.giveBackAheadOfOthers(lanes, now);
    this.startAhead([...this.claimedAhead.keys()]);
    const free = this.freeSlots();
    const spare = spareSlots(config.maxInFlight);
    const planned: Planned[] = [];
    const offers: {
      lane: Lane;
      busy: number;
      deliveries: PendingDelivery[];
    }[] = [];
    let backlog = this.claimedAhead.size > 0;
    let withWork = 0;
    for (const lane of lanes) {
      const condition = conditionOf(lane.receiver, now);
      const busy = this.inFlightByLane.get(lane.id) ?? 0;
      const ahead = this.aheadOf(lane.id);
      if (busy > 0 || ahead > 0) withWork += 1;
      if (condition === 'paused' || condition === 'probing') continue;
      if (condition === 'probe-due') {
        if (busy === 0 && free - planned.length > spare) {
          const probe = await this.probeOf(lane, head, now);
          if (probe) {
            planned.push(probe);
            withWork += 1;
          }
        }
        continue;
      }
      const limit = this.laneLimit(lane.id);
      // to start now, then to claim ahead
      const room =
        Math.max(0, limit - busy - ahead) +
        (this.claimsAhead(lane, now) ? this.aheadDepth(lane.id) - ahead : 0);
      if (room <= 0) {
        backlog = true;
        continue;
      }
      const taken = await this.dueOf(lane, head, now, room);
      if (taken.more) backlog = true;
      if (taken.deliveries.length === 0) continue;
      if (busy === 0 && ahead === 0) withWork += 1;
      offers.push({ lane, busy: busy + ahead, deliveries: taken.deliveries });
    }
    const share = fairShare(config.maxInFlight, withWork);
    this.allowance.clear();
    for (const lane of lanes) {
      this.allowance.set(lane.id, Math.min(share, this.laneLimit(lane.id)));
    }
    let available = free - planned.length;
    // the first attempts of quick lanes with none in flight, from any free slot
    const grants = offers.map(({ lane, busy }) => {
      if (busy > 0 || !this.isQuick(lane) || available <= 0) return 0;
      available -= 1;
      return 1;
    });
    // then every lane up to its share, leaving the spare slots free
    const claimAhead: Planned[] = [];
    offers.forEach(({ lane, busy, deliveries }, index) => {
      const wanted = Math.min(deliveries.length, share - busy);
      const more = Math.max(
        0,
        Math.min(wanted - grants[index], available - spare),
      );
      grants[index] += more;
      available -= more;
      const plan = (delivery: PendingDelivery) => ({
        delivery,
        lane,
        epoch: lane.receiver.epoch,
        probe: false,
      });
      planned.push(...deliveries.slice(0, grants[index]).map(plan));
      const ahead = this.claimsAhead(lane, now)
        ? deliveries.slice(
            grants[index],
            grants[index] + this.aheadDepth(lane.id) - this.aheadOf(lane.id),
          )
        : [];
      claimAhead.push(...ahead.map(plan));
      if (grants[index] < deliveries.length) backlog = true;
    });
    await this.start(planned, claimAhead, onAttemptEnd);
    return { backlog };
  }

  /** Whether a lane's next attempts are claimed ahead of its slots: a healthy, fast receiver. */
  private claimsAhead(lane: Lane, now: Date): boolean {
    return (
      conditionOf(lane.receiver, now) === 'healthy' &&
      this.isQuick(lane) &&
      this.aheadDepth(lane.id) > 0
    );
  }

  /**
   * How many attempts a lane claims ahead: those its slots start, one answer at a time, within
   * half a claim's margin, CLAIM_AHEAD_FACTOR times its limit at most; none before its
   * receiver has answered.
   */
  private aheadDepth(laneId: string): number {
    const answerMs = this.answerTimes.get(laneId);
    if (answerMs === undefined) return 0;
    const limit = this.laneLimit(laneId);
    const rounds = Math.min(
      CLAIM_AHEAD_FACTOR,
      Math.floor(CLAIM_MARGIN_MS / 2 / Math.max(1, answerMs)),
    );
    return limit * rounds;
  }

  /**
   * Gives back what is claimed ahead for lanes that no longer claim ahead (slower now, failing,
   * paused) or are gone.
   */
  private async giveBackAheadOfOthers(lanes: Lane[], now: Date): Promise<void> {
    const claiming = new Set(
      lanes.filter((lane) => this.claimsAhead(lane, now)).map(({ id }) => id),
    );
    await Promise.all(
      [...this.claimedAhead.keys()]
        .filter((laneId) => !claiming.has(laneId))
        .map((laneId) => this.giveBackAhead(laneId)),
    );
  }

  private aheadOf(laneId: string): number {
    return this.claimedAhead.get(laneId)?.length ?? 0;
  }

  /**
   * Starts attempts claimed ahead, of each of the lanes, while the lane is within its share
   * and the spare slots stay free; a lane with none in flight may take a spare slot, as its
   * first attempt would (claimed ahead, its receiver is quick).
   */
  private startAhead(laneIds: Iterable<string>): number {
    const spare = spareSlots(this.dependencies.config.maxInFlight);
    let started = 0;
    for (const laneId of laneIds) {
      const queue = this.claimedAhead.get(laneId);
      while (queue?.length && !this.dependencies.signal.aborted) {
        const busy = this.inFlightByLane.get(laneId) ?? 0;
        const free = this.freeSlots();
        if (busy >= (this.allowance.get(laneId) ?? 0)) break;
        if (free <= spare && (busy > 0 || free <= 0)) break;
        this.launch(queue.shift()!);
        started += 1;
      }
      if (queue?.length === 0) this.claimedAhead.delete(laneId);
    }
    return started;
  }

  /** A lane's attempts claimed ahead, given back unsent: their counts taken back. */
  private async giveBackAhead(laneId: string): Promise<void> {
    const queue = this.claimedAhead.get(laneId) ?? [];
    this.claimedAhead.delete(laneId);
    await Promise.allSettled(
      queue.map(({ delivery }) => this.dependencies.store.withdraw(delivery)),
    );
  }

  /** A receiver that has not failed since its last success and answers within WEBHOOKS_SLOW. */
  private isQuick(lane: Lane): boolean {
    const answerMs = this.answerTimes.get(lane.id);
    return (
      lane.receiver.consecutiveFailures === 0 &&
      !this.failing.has(lane.id) &&
      (answerMs === undefined || answerMs <= this.dependencies.config.slowMs)
    );
  }

  /**
   * The most attempts a lane may have in flight here: WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION
   * while its receiver answers within WEBHOOKS_SLOW, fewer in proportion past it (twice as
   * slow, half as many; one at least), so that slowness costs a receiver throughput smoothly
   * and holds fewer slots, never a pause. Answer times are timed from when the request was
   * written (webhook-sender.ts): the service's own queueing never counts against a receiver.
   */
  private laneLimit(laneId: string): number {
    const { maxInFlightPerSubscription, slowMs } = this.dependencies.config;
    const answerMs = this.answerTimes.get(laneId);
    if (answerMs === undefined || answerMs <= slowMs) {
      return maxInFlightPerSubscription;
    }
    return Math.max(
      1,
      Math.floor((maxInFlightPerSubscription * slowMs) / answerMs),
    );
  }

  /** A lane's receiver answered in `answerMs`: its recent answer time moves towards it. */
  private noteAnswer(laneId: string, answerMs: number): void {
    const previous = this.answerTimes.get(laneId);
    this.answerTimes.delete(laneId);
    // a map in order of use, the least recently used first out
    this.answerTimes.set(
      laneId,
      previous === undefined
        ? answerMs
        : previous + ANSWER_TIME_WEIGHT * (answerMs - previous),
    );
    if (this.answerTimes.size > ANSWER_TIMES_KEPT) {
      this.answerTimes.delete(this.answerTimes.keys().next().value!);
    }
  }

  /**
   * Up to `room` deliveries of a lane that may send: those due, then, when they run out, ones
   * made from its next events, as many as its cap of pending deliveries allows: the next polls
   * find them due, and make none.
   */
  private async dueOf(
    lane: Lane,
    head: bigint,
    now: Date,
    room: number,
  ): Promise<{ deliveries: PendingDelivery[]; more: boolean }> {
    const { store, config } = this.dependencies;
    let due = await store.due(lane.id, now, now, room);
    const cap = PENDING_CAP_FACTOR * config.maxInFlightPerSubscription;
    let more = due.length === room;
    if (!more && lane.cursor < head) {
      const { made, cursor } = await store.materialize(
        lane,
        head,
        SCAN_PER_LANE,
        cap,
        now,
      );
      if (made > 0) due = await store.due(lane.id, now, now, room);
      more = cursor < head || due.length === room;
    }
    return { deliveries: due, more };
  }

  /**
   * A receiver whose pause is over is probed by one attempt: its oldest pending delivery, due
   * or not, or else one made from its next event. The probe runs in an epoch of its own, which
   * only its outcome can end; whichever instance moves the receiver into it makes the probe.
   */
  private async probeOf(
    lane: Lane,
    head: bigint,
    now: Date,
  ): Promise<Planned | undefined> {
    const { store, config } = this.dependencies;
    let [candidate] = await store.due(lane.id, ANY_TIME, now, 1);
    if (!candidate && lane.cursor < head) {
      const { made } = await store.materialize(
        lane,
        head,
        SCAN_PER_LANE,
        1,
        now,
      );
      if (made > 0) [candidate] = await store.due(lane.id, ANY_TIME, now, 1);
    }
    if (!candidate) return undefined;
    const next = probingState(lane.receiver, claimUntil(now, config));
    if (!(await store.changeReceiver(lane.id, lane.receiver.epoch, next))) {
      return undefined;
    }
    this.dependencies.observer.receiverChanged({
      to: 'probing',
      subscriptionId: lane.id,
      deliveryId: candidate.id,
    });
    // probed now, whatever its schedule said
    return {
      delivery: { ...candidate, nextAttemptAt: now },
      lane,
      epoch: next.epoch,
      probe: true,
      probeUntil: next.probeUntil!,
    };
  }

  private async start(
    planned: Planned[],
    claimAhead: Planned[],
    onAttemptEnd?: (replaced: boolean) => void,
  ): Promise<void> {
    const waiting = [...planned, ...claimAhead].filter(
      ({ delivery }) => !this.inFlight.has(delivery.id),
    );
    if (waiting.length === 0) return;
    const { store, config } = this.dependencies;
    const events = new Map(
      (await store.events(waiting.map(({ delivery }) => delivery.eventId))).map(
        (event) => [event.id, event],
      ),
    );
    // the claim runs from when it is taken: on a loaded database the poll's reads can take
    // longer than a claim's margin, and a claim dated from before them would be too short
    const claimedAt = new Date(this.dependencies.now());
    const until = claimUntil(claimedAt, config);
    const token = this.token();
    const claimed = await store.claim(
      waiting.filter(({ probeUntil }) => !probeUntil || probeUntil > claimedAt),
      token,
      claimedAt,
      until,
    );
    const startNow = new Set(planned);
    for (const planning of waiting) {
      const { delivery, lane } = planning;
      if (!claimed.has(delivery.id)) continue;
      const ready: Ready = {
        ...planning,
        delivery: { ...delivery, token, claimedUntil: until },
        event: events.get(delivery.eventId),
        onAttemptEnd,
      };
      if (startNow.has(planning)) {
        this.launch(ready);
      } else {
        const queue = this.claimedAhead.get(lane.id) ?? [];
        queue.push(ready);
        this.claimedAhead.set(lane.id, queue);
      }
    }
  }

  private launch(ready: Ready): void {
    const { delivery, lane, event, epoch, probe, onAttemptEnd } = ready;
    this.slotsTaken += 1;
    this.track(lane.id, +1);
    let held = true;
    const freeSlot = () => {
      if (!held) return;
      held = false;
      this.slotsTaken -= 1;
      this.track(lane.id, -1);
      onAttemptEnd?.(this.startAhead([lane.id]) > 0);
    };
    const attempt = this.attempt(delivery, lane, event, epoch, probe, freeSlot)
      .catch((error: unknown) => {
        // its claim runs out, and the delivery is attempted again: at least once
        if (!this.dependencies.signal.aborted) {
          this.dependencies.observer.attemptFailed(delivery, error);
        }
      })
      .finally(() => {
        this.inFlight.delete(delivery.id);
        freeSlot();
      });
    this.inFlight.set(delivery.id, attempt);
  }

  private track(laneId: string, change: 1 | -1): void {
    const count = (this.inFlightByLane.get(laneId) ?? 0) + change;
    if (count > 0) this.inFlightByLane.set(laneId, count);
    else this.inFlightByLane.delete(laneId);
  }

  /**
   * One attempt, counted when claimed: a request sent is counted once, whoever settles it; one
   * that this instance never sent (it stopped past its claim, or is shutting down) is taken
   * back.
   */
  private async attempt(
    delivery: ClaimedDelivery,
    lane: Lane,
    event: EventToSend | undefined,
    epoch: number,
    probe: boolean,
    freeSlot: () => void,
  ): Promise<void> {
    const { store, config, signal } = this.dependencies;
    if (!event) {
      await store.cancel(delivery);
      return;
    }
    // a whole attempt must fit in the claim, or another instance may take it over meanwhile
    if (
      delivery.claimedUntil.getTime() - this.dependencies.now() <
      config.timeoutMs
    ) {
      await store.withdraw(delivery);
      return;
    }
    const started = this.dependencies.now();
    const outcome = await this.dependencies.send(
      {
        url: lane.url,
        secret: lane.secret,
        id: delivery.id,
        type: event.type,
        body: deliveryBody(event),
      },
      signal,
      { subscriptionId: lane.id, number: delivery.attempts + 1 },
    );
    if (outcome.abandoned) {
      await store.withdraw(delivery);
      return;
    }
    if (signal.aborted) {
      // sent, and cut short by shutdown before its answer: counted, due again at once
      await store.settle(delivery, {
        status: 'pending',
        nextAttemptAt: new Date(this.dependencies.now()),
        lastAttemptAt: new Date(started),
        lastStatusCode: null,
        lastError: 'the service shut down before the receiver answered',
      });
      return;
    }
    const ended = new Date(this.dependencies.now());
    if (outcome.delivered) {
      this.noteAnswer(lane.id, outcome.answerMs ?? ended.getTime() - started);
      // the receiver is done with it: its slot is free while the outcome is recorded (a
      // failure holds its slot until it is counted, so that a failing receiver gets no more)
      if (!probe) freeSlot();
    }
    const retryAt =
      outcome.delivered || outcome.refused
        ? undefined
        : nextAttemptAt(
            delivery.attempts + 1,
            delivery.createdAt,
            ended,
            config,
            this.random,
          );
    const settlement: Settlement = {
      status: outcome.delivered ? 'delivered' : retryAt ? 'pending' : 'failed',
      nextAttemptAt: retryAt ?? ended,
      lastAttemptAt: new Date(started),
      lastStatusCode: outcome.statusCode ?? null,
      lastError: outcome.error ?? null,
    };
    const own = await this.withinClaim(delivery, () =>
      store.settle(delivery, settlement),
    );
    this.dependencies.observer.attempted(delivery, outcome, retryAt);
    // its claim ran out meanwhile: the delivery and its receiver are another instance's now
    if (!own) return;
    if (settlement.status !== 'pending') {
      this.dependencies.observer.settled(
        settlement.status === 'delivered' ? 'delivered' : 'failed',
      );
    }
    const failure = outcome.delivered ? undefined : (outcome.error ?? 'failed');
    await this.followReceiver(lane, epoch, probe, failure, ended);
  }

  /**
   * Records what a request came to, trying again while the database does not answer and the
   * claim still holds (its margin, CLAIM_MARGIN_MS, at least, past the request): an answered
   * request is recorded once the database is back, rather than sent again once the claim runs
   * out. A settlement that did commit before its answer was lost finds the claim gone the
   * second time, and says so (false), as when the claim ran out.
   */
  private async withinClaim<T>(
    delivery: ClaimedDelivery,
    record: () => Promise<T>,
  ): Promise<T> {
    const { now, signal } = this.dependencies;
    const sleep = this.dependencies.sleep ?? delay;
    for (
      let waitMs = RECORD_RETRY_MS;
      ;
      waitMs = Math.min(2 * waitMs, RECORD_RETRY_MAX_MS)
    ) {
      try {
        return await record();
      } catch (error) {
        if (
          signal.aborted ||
          now() + waitMs >= delivery.claimedUntil.getTime()
        ) {
          throw error;
        }
        await sleep(waitMs);
      }
    }
  }

  /**
   * Moves the receiver on by one attempt's outcome, in the epoch the attempt began in; an
   * outcome of an older epoch changes nothing (receiver-state.ts).
   */
  private async followReceiver(
    lane: Lane,
    epoch: number,
    probe: boolean,
    failure: string | undefined,
    now: Date,
  ): Promise<void> {
    const { store, config, observer } = this.dependencies;
    const id = lane.id;
    const receiver = { ...lane.receiver, epoch };
    if (probe) {
      const next =
        failure === undefined
          ? resumedState(receiver)
          : pausedState(receiver, receiver.pauseLevel + 1, now, config);
      if (!(await store.changeReceiver(id, epoch, next))) return;
      observer.receiverChanged(
        failure === undefined
          ? { to: 'resumed', subscriptionId: id }
          : {
              to: 'paused',
              subscriptionId: id,
              from: now,
              until: next.pausedUntil!,
              failedProbes: next.pauseLevel,
              error: failure,
            },
      );
      return;
    }
    if (failure === undefined) {
      // a receiver seen without failures, and none counted here since, has none to clear: no
      // statement per delivery for a healthy receiver
      if (lane.receiver.consecutiveFailures === 0 && !this.failing.has(id)) {
        return;
      }
      this.failing.delete(id);
      if (await store.clearFailures(id, epoch)) {
        observer.receiverChanged({ to: 'healthy', subscriptionId: id });
      }
      return;
    }
    const failures = await store.countFailure(id, epoch);
    if (failures === undefined) return;
    this.failing.add(id);
    if (failures < config.failuresBeforePause) {
      if (failures === 1) {
        observer.receiverChanged({
          to: 'failing',
          subscriptionId: id,
          error: failure,
        });
      }
      return;
    }
    const next = pausedState(
      { ...receiver, consecutiveFailures: failures },
      0,
      now,
      config,
    );
    // unless a success came meanwhile and cleared them
    if (
      await store.changeReceiver(id, epoch, next, config.failuresBeforePause)
    ) {
      observer.receiverChanged({
        to: 'paused',
        subscriptionId: id,
        from: now,
        until: next.pausedUntil!,
        failedProbes: 0,
        error: failure,
      });
    }
  }
}

function claimUntil(from: Date, config: Pick<EngineConfig, 'timeoutMs'>): Date {
  return new Date(from.getTime() + config.timeoutMs + CLAIM_MARGIN_MS);
}

/** In a random order, so that no subscription is always served first. */
function shuffled<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

/**
 * The body of a delivery: the event's payload written out in the service's own JSON, integers
 * exact and absent fields left out, whatever spacing or escapes the database wrote it with.
 */
export function deliveryBody({
  payload,
}: Pick<EventToSend, 'payload'>): string {
  return stringifyLosslessJson(parseLosslessJson(payload));
}
