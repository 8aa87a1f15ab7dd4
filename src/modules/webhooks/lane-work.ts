import {
  PENDING_CAP_FACTOR,
  type Lane,
  type PendingDelivery,
} from './delivery-store';
import type { EngineConfig, EngineDependencies } from './engine-dependencies';
import { CLAIM_MARGIN_MS } from './lane-pace';
import { probingState } from './receiver-state';

/** Places of the log one subscription looks at per poll, whatever their types. */
export const SCAN_PER_LANE = 1000;

/** A probe looks for its delivery among every pending one, due or not. */
const ANY_TIME = new Date(8_640_000_000_000_000);

/** An attempt to start: the claimed delivery, and the receiver's epoch it runs in. */
export interface Planned {
  delivery: PendingDelivery;
  lane: Lane;
  epoch: number;
  probe: boolean;
  /** A probe's end: claimed past it, it could overlap the next instance's probe. */
  probeUntil?: Date;
}

/**
 * Up to `room` deliveries of a lane that may send: those due, then, when they run out, ones
 * made from its next events, as many as its cap of pending deliveries allows: the next polls
 * find them due, and make none.
 */
export async function dueOf(
  { store, config }: Pick<EngineDependencies, 'store' | 'config'>,
  lane: Lane,
  head: bigint,
  now: Date,
  room: number,
): Promise<{ deliveries: PendingDelivery[]; more: boolean }> {
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
export async function probeOf(
  {
    store,
    config,
    observer,
  }: Pick<EngineDependencies, 'store' | 'config' | 'observer'>,
  lane: Lane,
  head: bigint,
  now: Date,
): Promise<Planned | undefined> {
  let [candidate] = await store.due(lane.id, ANY_TIME, now, 1);
  if (!candidate && lane.cursor < head) {
    const { made } = await store.materialize(lane, head, SCAN_PER_LANE, 1, now);
    if (made > 0) [candidate] = await store.due(lane.id, ANY_TIME, now, 1);
  }
  if (!candidate) return undefined;
  const next = probingState(lane.receiver, claimUntil(now, config));
  if (!(await store.changeReceiver(lane.id, lane.receiver.epoch, next))) {
    return undefined;
  }
  observer.receiverChanged({
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

/** When a claim taken at `from` runs out: the attempt's timeout and the margin past it. */
export function claimUntil(
  from: Date,
  config: Pick<EngineConfig, 'timeoutMs'>,
): Date {
  return new Date(from.getTime() + config.timeoutMs + CLAIM_MARGIN_MS);
}
