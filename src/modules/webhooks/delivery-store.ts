import type { DeliveryStatus } from './webhook-delivery.entity';

/**
 * What a subscription's receiver has shown lately, kept with the subscription so that every
 * instance sees one receiver the same way (receiver-state.ts says what each value means).
 */
export interface ReceiverState {
  /** Attempts failed in a row, across its deliveries; 0 after a success. */
  consecutiveFailures: number;
  /** Set while it is paused, and after, until a probe's success resumes it. */
  pausedUntil: Date | null;
  /** Failed probes since it was paused: its pause is `WEBHOOKS_PAUSE` times 2 to this. */
  pauseLevel: number;
  /**
   * Moves on at every change of state (paused, probing, resumed): an attempt's outcome counts
   * only in the epoch its attempt began in, so attempts started before a change never advance
   * the state a second time.
   */
  epoch: number;
  /** While in the future, one probe is being made; a probe's instance that died leaves it to run out. */
  probeUntil: Date | null;
}

/** A subscription as the dispatcher works with it. */
export interface Lane {
  id: string;
  url: string;
  secret: string;
  /** The types it receives; null for every type. */
  eventTypes: string[] | null;
  /** The place in the event log up to which its deliveries are made (or skipped, when given up). */
  cursor: bigint;
  receiver: ReceiverState;
}

export interface PendingDelivery {
  /** The Standard Webhooks `webhook-id`. */
  id: string;
  subscriptionId: string;
  eventId: string;
  /** Attempts made so far. */
  attempts: number;
  /** Its event's time: the retry window is counted from it. */
  createdAt: Date;
  nextAttemptAt: Date;
}

/** A delivery to claim, in the receiver epoch its lane was read in. */
export interface ToClaim {
  delivery: PendingDelivery;
  epoch: number;
}

/** A delivery this instance holds: its attempt is counted, and only it may settle it. */
export interface ClaimedDelivery extends PendingDelivery {
  token: string;
  claimedUntil: Date;
}

export interface EventToSend {
  id: string;
  type: string;
  payload: string;
}

/** How an attempt leaves its delivery. */
export interface Settlement {
  status: Exclude<DeliveryStatus, 'pending'> | 'pending';
  /** When it is due again, while pending. */
  nextAttemptAt: Date;
  lastAttemptAt: Date;
  lastStatusCode: number | null;
  lastError: string | null;
}

/**
 * The dispatcher's reads and writes, each one atomic (a statement, or a transaction): the SQL
 * store over both engines (sql-delivery-store.ts), and an in-memory one that the simulation
 * runs the same dispatcher against (test/simulation/memory-delivery-store.ts).
 */
export interface DeliveryStore {
  /**
   * Gives the events committed since the last call their place in the log, at most `limit`,
   * oldest first; the log's head (the place of the newest). One instance at a time.
   */
  sequence(limit: number): Promise<bigint>;

  /** The active subscriptions. */
  lanes(): Promise<Lane[]>;

  /**
   * Makes the deliveries of the lane's next events of its types past its cursor, until it has
   * `cap` pending deliveries, looking at no more than `scan` places of the log up to `head`, and
   * moves the cursor over what it looked at: past events of other types too, so that none is
   * looked at twice. Nothing, when the cursor is no longer `lane.cursor` (another instance
   * moved it).
   */
  materialize(
    lane: Lane,
    head: bigint,
    scan: number,
    cap: number,
    now: Date,
  ): Promise<{ cursor: bigint; made: number }>;

  /**
   * Its oldest pending deliveries due by `dueBy` and unclaimed at `now`, at most `limit`, in
   * the order they are due.
   */
  due(
    subscriptionId: string,
    dueBy: Date,
    now: Date,
    limit: number,
  ): Promise<PendingDelivery[]>;

  /**
   * Takes each delivery that is still as read (pending, unclaimed, at the attempts read, its
   * receiver still in the epoch its lane was read in) for this instance until `until`, under
   * `token`, and counts its attempt. The ids taken. The epoch is checked in the same
   * statement: a poll that read its lanes before another attempt paused the receiver claims
   * nothing of it after.
   */
  claim(
    wanted: readonly ToClaim[],
    token: string,
    now: Date,
    until: Date,
  ): Promise<Set<string>>;

  /**
   * An attempt claimed and not sent (its instance stopped past its claim): its count is taken
   * back, and its claim released if it is still the instance's own.
   */
  withdraw(delivery: ClaimedDelivery): Promise<void>;

  /** Records an attempt's outcome, if the claim is still the instance's own; says whether it was. */
  settle(delivery: ClaimedDelivery, settlement: Settlement): Promise<boolean>;

  /**
   * A delivery whose event is gone: its count taken back (no attempt was made), and cancelled,
   * if still claimed by `delivery.token`.
   */
  cancel(delivery: ClaimedDelivery): Promise<void>;

  events(ids: readonly string[]): Promise<EventToSend[]>;

  /** One more failure in a row, if the receiver is still in `epoch`: the new count. */
  countFailure(
    subscriptionId: string,
    epoch: number,
  ): Promise<number | undefined>;

  /** No failure in a row any more, if the receiver is still in `epoch`: whether it had any. */
  clearFailures(subscriptionId: string, epoch: number): Promise<boolean>;

  /**
   * The receiver's new state, if it is still in `epoch` (and, with `failedAtLeast`, still has
   * that many failures in a row: a success that came meanwhile keeps it from a pause); whether
   * it was.
   */
  changeReceiver(
    subscriptionId: string,
    epoch: number,
    next: ReceiverState,
    failedAtLeast?: number,
  ): Promise<boolean>;
}

/**
 * Pending deliveries a subscription may have at once, as a multiple of its in-flight share:
 * past it, its events wait in the log (its cursor stays), not as rows.
 */
export const PENDING_CAP_FACTOR = 24;
