import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { createHash } from 'node:crypto';
import {
  Brackets,
  DataSource,
  type Repository,
  type SelectQueryBuilder,
} from 'typeorm';
import { EntitySql } from '../../platform/database';
import { OutboxEvent } from '../../platform/events';
import {
  type ClaimedDelivery,
  type DeliveryStore,
  type EventToSend,
  type Lane,
  type PendingDelivery,
  type ReceiverState,
  type ToClaim,
  type Settlement,
} from './delivery-store';
import { SettlementBatches } from './settlement-batches';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookSubscription } from './webhook-subscription.entity';

/**
 * A subscription's oldest pending deliveries due by `dueBy` and unclaimed at `now`, at most
 * `limit`. It reads the partial index of pending rows (IDX_webhook_deliveries_due), so it costs
 * the same with a million delivered rows as with none (test/delivery-poll.slow-spec.ts).
 */
export function dueDeliveriesOf(
  deliveries: Repository<WebhookDelivery>,
  subscriptionId: string,
  dueBy: Date,
  now: Date,
  limit: number,
): SelectQueryBuilder<WebhookDelivery> {
  return deliveries
    .createQueryBuilder('delivery')
    .where('delivery.subscription_id = :id', { id: subscriptionId })
    .andWhere("delivery.status = 'pending'")
    .andWhere('delivery.next_attempt_at <= :dueBy', { dueBy })
    .andWhere(
      new Brackets((claim) =>
        claim
          .where('delivery.claimed_until IS NULL')
          .orWhere('delivery.claimed_until < :now', { now }),
      ),
    )
    .orderBy('delivery.next_attempt_at', 'ASC')
    .limit(limit);
}

/**
 * A delivery's `webhook-id`: `msg_`, its event's time in ms (12 hex digits), and 80 bits of the
 * SHA-256 of its subscription's and its event's ids. One event has one id for one subscription
 * whichever instance, or store restored from a backup, makes its delivery (docs/decisions.md,
 * "Backups and moves"), so that a receiver drops what it already has.
 */
export function deliveryId(
  subscriptionId: string,
  event: { id: string; createdAt: Date },
): string {
  const time = event.createdAt.getTime().toString(16).padStart(12, '0');
  const digest = createHash('sha256')
    .update(`${subscriptionId}\n${event.id}`)
    .digest('hex');
  return `msg_${time}${digest.slice(0, 20)}`;
}

/**
 * The dispatcher's storage on either engine (delivery-store.ts): each call one statement, or
 * one short transaction where it must read and write together. The event log's sequencing and
 * a cursor's move take their row's lock on PostgreSQL, so that instances take turns on them.
 */
@Injectable()
export class SqlDeliveryStore implements DeliveryStore {
  private readonly deliveries: EntitySql<WebhookDelivery>;
  private readonly subscriptions: EntitySql<WebhookSubscription>;
  private readonly log: EntitySql<OutboxEvent>;
  private readonly postgres: boolean;
  private readonly settlements: SettlementBatches;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.deliveries = new EntitySql(dataSource, WebhookDelivery);
    this.subscriptions = new EntitySql(dataSource, WebhookSubscription);
    this.log = new EntitySql(dataSource, OutboxEvent);
    this.postgres = dataSource.options.type === 'postgres';
    this.settlements = new SettlementBatches(this.deliveries, this.postgres);
  }

  /** `FOR UPDATE` where rows can be locked (PostgreSQL); SQLite's transaction holds them all. */
  private get forUpdate(): string {
    return this.postgres ? ' FOR UPDATE' : '';
  }

  async sequence(limit: number): Promise<bigint> {
    const $ = this.log.parameter;
    if (this.postgres) {
      // the statements below in one round trip (the EventSequencing migration)
      const [{ row }] = await this.log.selectWithRows(
        `SELECT events_sequence(${$(1)}) AS "head"`,
        [limit],
      );
      return BigInt(row.head as string | bigint);
    }
    // idle, the usual case: one read, no lock
    const [{ row }] = await this.log.selectWithRows(
      `SELECT "last_seq", EXISTS (SELECT 1 FROM "events" WHERE "seq" IS NULL) AS "waiting" FROM "event_log" WHERE "id" = 1`,
      [],
    );
    if (!truthy(row.waiting)) return BigInt(row.last_seq as string | bigint);
    return this.dataSource.transaction('READ COMMITTED', async () => {
      const [{ row: head }] = await this.log.selectWithRows(
        `SELECT "last_seq" FROM "event_log" WHERE "id" = 1${this.forUpdate}`,
        [],
      );
      const last = BigInt(head.last_seq as string | bigint);
      // the committed events that have no place yet, oldest first; one statement, which also
      // sees those committed while it waited for the lock
      const placed = await this.log.execute(
        `UPDATE "events" SET "seq" = "numbered"."seq" FROM (` +
          `SELECT "id", ${$(1)} + row_number() OVER (ORDER BY "created_at", "id") AS "seq" ` +
          `FROM "events" WHERE "seq" IS NULL ORDER BY "created_at", "id" LIMIT ${$(2)}` +
          `) AS "numbered" WHERE "events"."id" = "numbered"."id"`,
        [last, limit],
      );
      const next = last + BigInt(placed);
      await this.log.execute(
        `UPDATE "event_log" SET "last_seq" = ${$(1)} WHERE "id" = 1`,
        [next],
      );
      return next;
    });
  }

  async lanes(): Promise<Lane[]> {
    const active = await this.subscriptions.select(
      `SELECT ${this.subscriptions.columns} FROM "webhook_subscriptions" WHERE "removed_at" IS NULL`,
      [],
    );
    return active.map((subscription) => ({
      id: subscription.id,
      url: subscription.url,
      secret: subscription.secret,
      eventTypes: subscription.eventTypes,
      cursor: subscription.cursor,
      receiver: receiverOf(subscription),
    }));
  }

  async materialize(
    lane: Lane,
    head: bigint,
    scan: number,
    cap: number,
    now: Date,
  ): Promise<{ cursor: bigint; made: number }> {
    const $ = this.log.parameter;
    return this.dataSource.transaction('READ COMMITTED', async () => {
      const [current] = await this.subscriptions.selectWithRows(
        `SELECT "id", "cursor", (SELECT COUNT(*) FROM (SELECT 1 FROM "webhook_deliveries" ` +
          `WHERE "subscription_id" = ${$(1)} AND "status" = 'pending' LIMIT ${$(2)}) AS "capped") AS "pending" ` +
          `FROM "webhook_subscriptions" WHERE "id" = ${$(1)} AND "removed_at" IS NULL${this.forUpdate}`,
        [lane.id, cap],
      );
      // another instance moved it meanwhile: its deliveries are made
      if (current?.entity.cursor !== lane.cursor) {
        return { cursor: current?.entity.cursor ?? lane.cursor, made: 0 };
      }
      const room = cap - Number(current.row.pending);
      if (room <= 0) return { cursor: lane.cursor, made: 0 };
      const upTo =
        lane.cursor + BigInt(scan) < head ? lane.cursor + BigInt(scan) : head;
      const types = lane.eventTypes ?? [];
      const matching = await this.log.select(
        `SELECT "id", "created_at", "seq" FROM "events" WHERE "seq" > ${$(1)} AND "seq" <= ${$(2)}` +
          (types.length > 0
            ? ` AND "type" IN (${types.map((_type, index) => $(4 + index)).join(', ')})`
            : '') +
          ` ORDER BY "seq" LIMIT ${$(3)}`,
        [lane.cursor, upTo, room + 1, ...types],
      );
      const made = matching.slice(0, room);
      const cursor = matching.length > room ? made[room - 1].seq! : upTo;
      if (made.length > 0) await this.insertDeliveries(lane.id, made, now);
      await this.subscriptions.execute(
        `UPDATE "webhook_subscriptions" SET "cursor" = ${$(2)} WHERE "id" = ${$(1)}`,
        [lane.id, cursor],
      );
      return { cursor, made: made.length };
    });
  }

  /** One statement for a batch: its rows land together at the end of the table's key. */
  private async insertDeliveries(
    subscriptionId: string,
    events: OutboxEvent[],
    now: Date,
  ): Promise<void> {
    const $ = this.deliveries.parameter;
    const due = this.deliveries.stored('nextAttemptAt', now);
    const values = events.map(
      (_event, index) =>
        `(${$(3 + 3 * index)}, ${$(1)}, ${$(4 + 3 * index)}, 'pending', 0, ${$(2)}, ${$(5 + 3 * index)})`,
    );
    await this.deliveries.execute(
      `INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at") VALUES ${values.join(', ')}`,
      [
        subscriptionId,
        due,
        ...events.flatMap((event) => [
          deliveryId(subscriptionId, event),
          event.id,
          this.deliveries.stored('createdAt', event.createdAt),
        ]),
      ],
    );
  }

  async due(
    subscriptionId: string,
    dueBy: Date,
    now: Date,
    limit: number,
  ): Promise<PendingDelivery[]> {
    const rows = await dueDeliveriesOf(
      this.dataSource.getRepository(WebhookDelivery),
      subscriptionId,
      dueBy,
      now,
      limit,
    ).getMany();
    return rows.map(({ id, eventId, attempts, createdAt, nextAttemptAt }) => ({
      id,
      subscriptionId,
      eventId,
      attempts,
      createdAt,
      nextAttemptAt,
    }));
  }

  async claim(
    wanted: readonly ToClaim[],
    token: string,
    now: Date,
    until: Date,
  ): Promise<Set<string>> {
    if (wanted.length === 0) return new Set();
    const $ = this.deliveries.parameter;
    const parameters: unknown[] = [
      this.deliveries.stored('claimedUntil', until),
      this.deliveries.stored('claimedUntil', now),
      token,
    ];
    const next = (value: unknown) => $(parameters.push(value));
    // one test of the receiver's epoch per lane, a statement of its own that the engines run once
    const byLane = new Map<string, ToClaim[]>();
    for (const one of wanted) {
      const lane = `${one.delivery.subscriptionId} ${one.epoch}`;
      const ofLane = byLane.get(lane);
      if (ofLane) ofLane.push(one);
      else byLane.set(lane, [one]);
    }
    const asRead = [...byLane.values()]
      .map((ofLane) => {
        const [{ delivery, epoch }] = ofLane;
        const inEpoch =
          `EXISTS (SELECT 1 FROM "webhook_subscriptions" WHERE "id" = ${next(delivery.subscriptionId)} ` +
          `AND "receiver_epoch" = ${next(epoch)})`;
        const rows = ofLane
          .map(
            ({ delivery: { id, attempts } }) =>
              `("id" = ${next(id)} AND "attempts" = ${next(attempts)})`,
          )
          .join(' OR ');
        return `(${inEpoch} AND (${rows}))`;
      })
      .join(' OR ');
    const claimed = await this.deliveries.select(
      `UPDATE "webhook_deliveries" SET "claimed_until" = ${$(1)}, "claim_token" = ${$(3)}, "attempts" = "attempts" + 1 ` +
        `WHERE "status" = 'pending' AND ("claimed_until" IS NULL OR "claimed_until" < ${$(2)}) ` +
        `AND (${asRead}) RETURNING "id"`,
      parameters,
    );
    return new Set(claimed.map(({ id }) => id));
  }

  async withdraw(delivery: ClaimedDelivery): Promise<void> {
    const $ = this.deliveries.parameter;
    await this.deliveries.execute(
      `UPDATE "webhook_deliveries" SET "attempts" = "attempts" - 1, ` +
        `"claimed_until" = CASE WHEN "claim_token" = ${$(2)} THEN NULL ELSE "claimed_until" END, ` +
        `"claim_token" = CASE WHEN "claim_token" = ${$(2)} THEN NULL ELSE "claim_token" END ` +
        `WHERE "id" = ${$(1)}`,
      [delivery.id, delivery.token],
    );
  }

  /** Written together with others asked for meanwhile (settlement-batches.ts). */
  settle(delivery: ClaimedDelivery, settlement: Settlement): Promise<boolean> {
    return this.settlements.settle(delivery, settlement);
  }

  async cancel(delivery: ClaimedDelivery): Promise<void> {
    const $ = this.deliveries.parameter;
    const own = `"claim_token" = ${$(2)} AND "status" = 'pending'`;
    await this.deliveries.execute(
      `UPDATE "webhook_deliveries" SET "attempts" = "attempts" - 1, ` +
        `"status" = CASE WHEN ${own} THEN 'cancelled' ELSE "status" END, ` +
        `"claimed_until" = CASE WHEN ${own} THEN NULL ELSE "claimed_until" END, ` +
        `"claim_token" = CASE WHEN ${own} THEN NULL ELSE "claim_token" END ` +
        `WHERE "id" = ${$(1)}`,
      [delivery.id, delivery.token],
    );
  }

  async events(ids: readonly string[]): Promise<EventToSend[]> {
    if (ids.length === 0) return [];
    const $ = this.log.parameter;
    const found = await this.log.select(
      `SELECT "id", "type", "payload" FROM "events" WHERE "id" IN (${ids.map((_id, index) => $(index + 1)).join(', ')})`,
      [...ids],
    );
    return found.map(({ id, type, payload }) => ({ id, type, payload }));
  }

  async countFailure(
    subscriptionId: string,
    epoch: number,
  ): Promise<number | undefined> {
    const $ = this.subscriptions.parameter;
    const [counted] = await this.subscriptions.select(
      `UPDATE "webhook_subscriptions" SET "consecutive_failures" = "consecutive_failures" + 1 ` +
        `WHERE "id" = ${$(1)} AND "receiver_epoch" = ${$(2)} AND "removed_at" IS NULL RETURNING "consecutive_failures"`,
      [subscriptionId, epoch],
    );
    return counted?.consecutiveFailures;
  }

  async clearFailures(subscriptionId: string, epoch: number): Promise<boolean> {
    const $ = this.subscriptions.parameter;
    return (
      (await this.subscriptions.execute(
        `UPDATE "webhook_subscriptions" SET "consecutive_failures" = 0 ` +
          `WHERE "id" = ${$(1)} AND "receiver_epoch" = ${$(2)} AND "consecutive_failures" > 0 AND "removed_at" IS NULL`,
        [subscriptionId, epoch],
      )) > 0
    );
  }

  async changeReceiver(
    subscriptionId: string,
    epoch: number,
    next: ReceiverState,
    failedAtLeast = 0,
  ): Promise<boolean> {
    const $ = this.subscriptions.parameter;
    return (
      (await this.subscriptions.execute(
        `UPDATE "webhook_subscriptions" SET "consecutive_failures" = ${$(3)}, "paused_until" = ${$(4)}, ` +
          `"pause_level" = ${$(5)}, "receiver_epoch" = ${$(6)}, "probe_until" = ${$(7)} ` +
          `WHERE "id" = ${$(1)} AND "receiver_epoch" = ${$(2)} AND "consecutive_failures" >= ${$(8)} AND "removed_at" IS NULL`,
        [
          subscriptionId,
          epoch,
          next.consecutiveFailures,
          this.subscriptions.stored('pausedUntil', next.pausedUntil),
          next.pauseLevel,
          next.epoch,
          this.subscriptions.stored('probeUntil', next.probeUntil),
          failedAtLeast,
        ],
      )) > 0
    );
  }
}

function receiverOf(subscription: WebhookSubscription): ReceiverState {
  return {
    consecutiveFailures: subscription.consecutiveFailures,
    pausedUntil: subscription.pausedUntil,
    pauseLevel: subscription.pauseLevel,
    epoch: subscription.receiverEpoch,
    probeUntil: subscription.probeUntil,
  };
}

/** A boolean as each engine returns it: true, or 1 (a bigint, with SQLite's safe integers). */
function truthy(value: unknown): boolean {
  return value === true || value === 1 || value === 1n;
}
