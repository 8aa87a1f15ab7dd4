import type {
  ClaimedDelivery,
  DeliveryStore,
  EventToSend,
  Lane,
  PendingDelivery,
  ReceiverState,
  ToClaim,
  Settlement,
} from '../../src/modules/webhooks/delivery-store';
import type { DeliveryStatus } from '../../src/modules/webhooks/webhook-delivery.entity';

export interface StoredEvent extends EventToSend {
  createdAt: Date;
  seq: bigint | null;
}

export interface StoredSubscription {
  id: string;
  url: string;
  secret: string;
  eventTypes: string[] | null;
  cursor: bigint;
  removed: boolean;
  receiver: ReceiverState;
}

export interface StoredDelivery {
  id: string;
  subscriptionId: string;
  eventId: string;
  status: DeliveryStatus;
  attempts: number;
  nextAttemptAt: Date;
  createdAt: Date;
  claimedUntil: Date | null;
  claimToken: string | null;
  lastError: string | null;
}

/** The tables the SQL store keeps, in memory: what every simulated instance shares. */
export class MemoryDatabase {
  readonly events: StoredEvent[] = [];
  readonly subscriptions = new Map<string, StoredSubscription>();
  readonly deliveries = new Map<string, StoredDelivery>();
  head = 0n;
  private deliveryNumber = 0;

  /** A change committed with its event, as the triggers write it. */
  writeEvent(event: Omit<StoredEvent, 'seq'>): void {
    this.events.push({ ...event, seq: null });
  }

  subscribe(
    subscription: Omit<StoredSubscription, 'cursor' | 'removed'>,
  ): void {
    this.subscriptions.set(subscription.id, {
      ...subscription,
      cursor: this.head,
      removed: false,
    });
  }

  nextDeliveryId(event: StoredEvent): string {
    this.deliveryNumber += 1;
    return `msg_${event.createdAt.getTime().toString(16).padStart(12, '0')}${this.deliveryNumber.toString(16).padStart(20, '0')}`;
  }
}

/** What one call of the store read and wrote, for the bound on a poll's work. */
export interface StoreCall {
  operation: keyof DeliveryStore;
  rows: number;
  /** Made by a poll, not by an attempt's outcome. */
  poll: boolean;
}

const DATABASE_AWAY = 'the database did not answer';

const READS = new Set<keyof DeliveryStore>(['lanes', 'due', 'events']);

const POLL_OPERATIONS = new Set<keyof DeliveryStore>([
  'sequence',
  'lanes',
  'materialize',
  'due',
  'claim',
  'events',
]);

const wants = (types: string[] | null, type: string) =>
  types === null || types.includes(type);

/** What a run hears of, and does around, each call of the store. */
export interface StoreHooks {
  /** Runs before and after every call. */
  around: () => Promise<void>;
  /** While true, calls fail: before their change, or after it committed (answer lost). */
  unavailable?: () => boolean;
  record: (call: StoreCall) => void;
  /** Within the claim itself: what it took, under which token. */
  claimed?: (ids: Set<string>, token: string) => void;
  /** Within a withdrawal or a cancellation: the claim whose count it took back. */
  takenBack?: (delivery: ClaimedDelivery) => void;
  /** Within a change of a receiver's state: the state before and after. */
  receiverChanged?: (
    subscriptionId: string,
    before: ReceiverState,
    after: ReceiverState,
  ) => void;
}

/**
 * The DeliveryStore over a MemoryDatabase, with the SQL store's semantics: each call is atomic,
 * and `around` runs before and after it, so that the simulation can let time pass, interleave
 * instances and stop one between any two steps (after a change committed and before its
 * caller hears of it, too).
 */
export class MemoryDeliveryStore implements DeliveryStore {
  constructor(
    private readonly db: MemoryDatabase,
    private readonly hooks: StoreHooks,
  ) {}

  private async call<T>(
    operation: keyof DeliveryStore,
    body: () => { result: T; rows: number },
    poll = POLL_OPERATIONS.has(operation),
  ): Promise<T> {
    await this.hooks.around();
    if (this.hooks.unavailable?.()) throw new Error(DATABASE_AWAY);
    const { result, rows } = body();
    this.hooks.record({ operation, rows, poll });
    // a change may commit and its caller die before it hears so; a read changes nothing
    if (!READS.has(operation)) await this.hooks.around();
    // or the database go away after the commit, before its answer
    if (this.hooks.unavailable?.()) throw new Error(DATABASE_AWAY);
    return result;
  }

  sequence(limit: number): Promise<bigint> {
    return this.call('sequence', () => {
      const unsequenced = this.db.events
        .filter(({ seq }) => seq === null)
        .sort(
          (a, b) =>
            a.createdAt.getTime() - b.createdAt.getTime() ||
            a.id.localeCompare(b.id),
        )
        .slice(0, limit);
      for (const event of unsequenced) {
        this.db.head += 1n;
        event.seq = this.db.head;
      }
      return { result: this.db.head, rows: unsequenced.length + 1 };
    });
  }

  lanes(): Promise<Lane[]> {
    return this.call('lanes', () => {
      const lanes: Lane[] = [];
      for (const subscription of this.db.subscriptions.values()) {
        if (subscription.removed) continue;
        lanes.push({
          id: subscription.id,
          url: subscription.url,
          secret: subscription.secret,
          eventTypes: subscription.eventTypes,
          cursor: subscription.cursor,
          receiver: { ...subscription.receiver },
        });
      }
      return { result: lanes, rows: lanes.length };
    });
  }

  materialize(
    lane: Lane,
    head: bigint,
    scan: number,
    cap: number,
    now: Date,
  ): Promise<{ cursor: bigint; made: number }> {
    return this.call('materialize', () => {
      const subscription = this.db.subscriptions.get(lane.id)!;
      if (subscription.cursor !== lane.cursor || subscription.removed) {
        return { result: { cursor: subscription.cursor, made: 0 }, rows: 1 };
      }
      let pending = 0;
      for (const delivery of this.db.deliveries.values()) {
        if (
          delivery.subscriptionId === lane.id &&
          delivery.status === 'pending' &&
          pending < cap
        ) {
          pending += 1;
        }
      }
      const room = cap - pending;
      if (room <= 0) {
        return { result: { cursor: lane.cursor, made: 0 }, rows: 1 + pending };
      }
      const upTo =
        lane.cursor + BigInt(scan) < head ? lane.cursor + BigInt(scan) : head;
      const looked = this.db.events
        .filter(({ seq }) => seq !== null && seq > lane.cursor && seq <= upTo)
        .sort((a, b) => (a.seq! < b.seq! ? -1 : 1));
      const matching = looked.filter(({ type }) =>
        wants(subscription.eventTypes, type),
      );
      const made = matching.slice(0, room);
      const cursor = matching.length > room ? made[room - 1].seq! : upTo;
      for (const event of made) {
        const id = this.db.nextDeliveryId(event);
        this.db.deliveries.set(id, {
          id,
          subscriptionId: lane.id,
          eventId: event.id,
          status: 'pending',
          attempts: 0,
          nextAttemptAt: now,
          createdAt: event.createdAt,
          claimedUntil: null,
          claimToken: null,
          lastError: null,
        });
      }
      subscription.cursor = cursor;
      return {
        result: { cursor, made: made.length },
        rows: looked.length + made.length + pending + 1,
      };
    });
  }

  due(
    subscriptionId: string,
    dueBy: Date,
    now: Date,
    limit: number,
  ): Promise<PendingDelivery[]> {
    return this.call('due', () => {
      const due = [...this.db.deliveries.values()]
        .filter(
          (delivery) =>
            delivery.subscriptionId === subscriptionId &&
            delivery.status === 'pending' &&
            delivery.nextAttemptAt <= dueBy &&
            (delivery.claimedUntil === null || delivery.claimedUntil < now),
        )
        .sort((a, b) => a.nextAttemptAt.getTime() - b.nextAttemptAt.getTime())
        .slice(0, limit)
        .map(
          ({
            id,
            eventId,
            attempts,
            createdAt,
            nextAttemptAt,
          }): PendingDelivery => ({
            id,
            subscriptionId,
            eventId,
            attempts,
            createdAt,
            nextAttemptAt,
          }),
        );
      return { result: due, rows: due.length };
    });
  }

  claim(
    wanted: readonly ToClaim[],
    token: string,
    now: Date,
    until: Date,
  ): Promise<Set<string>> {
    return this.call('claim', () => {
      const claimed = new Set<string>();
      for (const { delivery: read, epoch } of wanted) {
        const row = this.db.deliveries.get(read.id);
        if (
          row?.status === 'pending' &&
          row.attempts === read.attempts &&
          this.db.subscriptions.get(read.subscriptionId)?.receiver.epoch ===
            epoch &&
          (row.claimedUntil === null || row.claimedUntil < now)
        ) {
          row.claimedUntil = until;
          row.claimToken = token;
          row.attempts += 1;
          claimed.add(row.id);
        }
      }
      this.hooks.claimed?.(claimed, token);
      return { result: claimed, rows: wanted.length };
    });
  }

  withdraw(delivery: ClaimedDelivery): Promise<void> {
    return this.call('withdraw', () => {
      const row = this.db.deliveries.get(delivery.id)!;
      row.attempts -= 1;
      this.hooks.takenBack?.(delivery);
      if (row.claimToken === delivery.token) {
        row.claimedUntil = null;
        row.claimToken = null;
      }
      return { result: undefined, rows: 1 };
    });
  }

  settle(delivery: ClaimedDelivery, settlement: Settlement): Promise<boolean> {
    return this.call('settle', () => {
      const row = this.db.deliveries.get(delivery.id)!;
      if (row.claimToken !== delivery.token || row.status !== 'pending') {
        return { result: false, rows: 1 };
      }
      Object.assign(row, {
        status: settlement.status,
        nextAttemptAt: settlement.nextAttemptAt,
        lastError: settlement.lastError,
        claimedUntil: null,
        claimToken: null,
      });
      return { result: true, rows: 1 };
    });
  }

  cancel(delivery: ClaimedDelivery): Promise<void> {
    return this.call('cancel', () => {
      const row = this.db.deliveries.get(delivery.id)!;
      // no attempt was made: its count is taken back
      row.attempts -= 1;
      this.hooks.takenBack?.(delivery);
      if (row.claimToken === delivery.token && row.status === 'pending') {
        Object.assign(row, {
          status: 'cancelled',
          claimedUntil: null,
          claimToken: null,
        });
      }
      return { result: undefined, rows: 1 };
    });
  }

  events(ids: readonly string[]): Promise<EventToSend[]> {
    return this.call('events', () => {
      const wanted = new Set(ids);
      const found = this.db.events.filter(({ id }) => wanted.has(id));
      return {
        result: found.map(({ id, type, payload }) => ({ id, type, payload })),
        rows: found.length,
      };
    });
  }

  countFailure(
    subscriptionId: string,
    epoch: number,
  ): Promise<number | undefined> {
    return this.call('countFailure', () => {
      const subscription = this.db.subscriptions.get(subscriptionId)!;
      if (subscription.removed || subscription.receiver.epoch !== epoch) {
        return { result: undefined, rows: 1 };
      }
      subscription.receiver.consecutiveFailures += 1;
      return {
        result: subscription.receiver.consecutiveFailures,
        rows: 1,
      };
    });
  }

  clearFailures(subscriptionId: string, epoch: number): Promise<boolean> {
    return this.call('clearFailures', () => {
      const { receiver, removed } = this.db.subscriptions.get(subscriptionId)!;
      if (
        removed ||
        receiver.epoch !== epoch ||
        receiver.consecutiveFailures === 0
      ) {
        return { result: false, rows: 1 };
      }
      receiver.consecutiveFailures = 0;
      return { result: true, rows: 1 };
    });
  }

  changeReceiver(
    subscriptionId: string,
    epoch: number,
    next: ReceiverState,
    failedAtLeast = 0,
  ): Promise<boolean> {
    return this.call(
      'changeReceiver',
      () => {
        const subscription = this.db.subscriptions.get(subscriptionId)!;
        if (
          subscription.removed ||
          subscription.receiver.epoch !== epoch ||
          subscription.receiver.consecutiveFailures < failedAtLeast
        ) {
          return { result: false, rows: 1 };
        }
        this.hooks.receiverChanged?.(
          subscriptionId,
          subscription.receiver,
          next,
        );
        subscription.receiver = { ...next };
        return { result: true, rows: 1 };
        // a probe is begun by a poll; every other change by an attempt's outcome
      },
      next.probeUntil !== null,
    );
  }
}
