import { randomBytes } from 'node:crypto';
import { DeliveryAttempts } from './delivery-attempts';
import {
  type ClaimedDelivery,
  type EventToSend,
  type Lane,
  type PendingDelivery,
} from './delivery-store';
import { fairShare, spareSlots } from './delivery-slots';
import type { EngineDependencies } from './engine-dependencies';
import { LanePace } from './lane-pace';
import { claimUntil, dueOf, probeOf, type Planned } from './lane-work';
import { ReceiverOutcomes } from './receiver-outcomes';
import { conditionOf } from './receiver-state';

/** Events given their place in the log per poll. */
export const SEQUENCE_BATCH = 1000;

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
  /** Attempts claimed ahead, by lane, oldest first (CLAIM_AHEAD_FACTOR). */
  private readonly claimedAhead = new Map<string, Ready[]>();
  /** The attempts a lane may have in flight, as the last poll shared the slots. */
  private readonly allowance = new Map<string, number>();
  private readonly token: () => string;
  private readonly random: () => number;
  private readonly pace: LanePace;
  private readonly receivers: ReceiverOutcomes;
  private readonly attempts: DeliveryAttempts;

  constructor(private readonly dependencies: EngineDependencies) {
    const { store, config, observer } = dependencies;
    this.token =
      dependencies.token ?? (() => randomBytes(12).toString('base64url'));
    this.random = dependencies.random ?? Math.random;
    this.pace = new LanePace(config);
    this.receivers = new ReceiverOutcomes(store, config, observer);
    this.attempts = new DeliveryAttempts(
      dependencies,
      this.pace,
      this.receivers,
      this.random,
    );
  }

  get attemptsInFlight(): number {
    return this.slotsTaken;
  }

  /** Every attempt under way settled, and those claimed ahead given back. */
  async drained(): Promise<void> {
    await Promise.allSettled([
      ...this.inFlight.values(),
      this.giveBackClaimedAhead(),
    ]);
  }

  /** Every attempt claimed ahead given back unsent, of every lane: the store is moving. */
  async giveBackClaimedAhead(): Promise<void> {
    await Promise.all(
      [...this.claimedAhead.keys()].map((laneId) => this.giveBackAhead(laneId)),
    );
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
          const probe = await probeOf(this.dependencies, lane, head, now);
          if (probe) {
            planned.push(probe);
            withWork += 1;
          }
        }
        continue;
      }
      const limit = this.pace.limit(lane.id);
      // to start now, then to claim ahead
      const room =
        Math.max(0, limit - busy - ahead) +
        (this.claimsAhead(lane, now)
          ? this.pace.aheadDepth(lane.id) - ahead
          : 0);
      if (room <= 0) {
        backlog = true;
        continue;
      }
      const taken = await dueOf(this.dependencies, lane, head, now, room);
      if (taken.more) backlog = true;
      if (taken.deliveries.length === 0) continue;
      if (busy === 0 && ahead === 0) withWork += 1;
      offers.push({ lane, busy: busy + ahead, deliveries: taken.deliveries });
    }
    const share = fairShare(config.maxInFlight, withWork);
    this.allowance.clear();
    for (const lane of lanes) {
      this.allowance.set(lane.id, Math.min(share, this.pace.limit(lane.id)));
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
            grants[index] +
              this.pace.aheadDepth(lane.id) -
              this.aheadOf(lane.id),
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
      this.pace.aheadDepth(lane.id) > 0
    );
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

  /** A receiver that has not failed since its last success and answers within WEBHOOKS_SLOW. */
  private isQuick(lane: Lane): boolean {
    return this.pace.isQuick(lane, this.receivers.isFailing(lane.id));
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
      while (
        queue?.length &&
        !this.dependencies.signal.aborted &&
        !this.dependencies.fenced?.()
      ) {
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
      // claimed as the store's fence went up: given back with those claimed ahead
      if (startNow.has(planning) && !this.dependencies.fenced?.()) {
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
    const attempt = this.attempts
      .run(delivery, lane, event, epoch, probe, freeSlot)
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
}

/** In a random order, so that no subscription is always served first. */
function shuffled<T>(items: T[], random: () => number): T[] {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}
