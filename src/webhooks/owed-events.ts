import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EntitySql } from '../database/entity-sql';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookSubscription } from './webhook-subscription.entity';

/** Owed events made into deliveries by one statement, while a receiver catches up. */
export const OWED_BATCH = 200;

/**
 * How far before its pause a subscription is owed its events. On PostgreSQL an event is dated
 * when its transaction began, and the fan-out trigger may run after the pause is committed:
 * such an event gets no row and must still be owed. Events of the overlap that did get a row
 * are not made twice.
 */
const OWED_OVERLAP_MS = 60_000;

/**
 * The events owed to a paused subscription (docs/decisions.md, "Webhooks"). While a receiver
 * is paused, the fan-out trigger writes no delivery row for it: 100 dead receivers would
 * otherwise cost every event 100 rows in the request's own statement (bench/README.md,
 * "Dead receivers"). Its events wait in the outbox, kept by retention; once the receiver
 * answers again, the dispatcher makes their deliveries, oldest first, a batch a poll, and then
 * gives the subscription each new event at once again. Each event becomes one delivery at most
 * for a subscription, however often this runs and on however many instances.
 */
@Injectable()
export class OwedEvents {
  private readonly deliveries: EntitySql<WebhookDelivery>;
  private readonly subscriptions: EntitySql<WebhookSubscription>;
  private readonly postgres: boolean;
  private readonly made: (extraCondition: string) => string;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.deliveries = new EntitySql(dataSource, WebhookDelivery);
    this.subscriptions = new EntitySql(dataSource, WebhookSubscription);
    this.postgres = dataSource.driver.options.type === 'postgres';
    // the same delivery ids and type filter as the fan-out trigger (migration OwedEvents)
    const [deliveryId, wanted] = this.postgres
      ? [
          `'msg_' || lpad(to_hex(floor(extract(epoch FROM e."created_at") * 1000)::bigint), 12, '0') || substr(md5(gen_random_uuid()::text), 1, 20)`,
          `position(',' || e."type" || ',' in ',' || s."event_types" || ',') > 0`,
        ]
      : [
          `'msg_' || printf('%012x', CAST(round((julianday(e."created_at") - 2440587.5) * 86400000) AS INTEGER)) || lower(hex(randomblob(10)))`,
          `instr(',' || s."event_types" || ',', ',' || e."type" || ',') > 0`,
        ];
    const $ = this.deliveries.parameter;
    this.made = (extraCondition) =>
      `INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at") ` +
      `SELECT ${deliveryId}, s."id", e."id", 'pending', 0, e."created_at", e."created_at" ` +
      `FROM "webhook_subscriptions" s JOIN "events" e ON e."created_at" >= s."owed_since" ` +
      `WHERE s."id" = ${$(1)} AND s."removed_at" IS NULL AND (s."event_types" IS NULL OR ${wanted}) ` +
      `AND NOT EXISTS (SELECT 1 FROM "webhook_deliveries" d WHERE d."event_id" = e."id" AND d."subscription_id" = s."id")${extraCondition} ` +
      `ORDER BY e."created_at", e."id" LIMIT ${$(2)} RETURNING "created_at"`;
  }

  /** From about `pausedAt` on, the subscription's events are owed to it, unless they already are. */
  async owe(subscriptionId: string, pausedAt: Date): Promise<void> {
    const $ = this.subscriptions.parameter;
    await this.subscriptions.execute(
      `UPDATE "webhook_subscriptions" SET "owed_since" = ${$(2)} WHERE "id" = ${$(1)} AND "owed_since" IS NULL`,
      [
        subscriptionId,
        this.subscriptions.stored(
          'owedSince',
          new Date(pausedAt.getTime() - OWED_OVERLAP_MS),
        ),
      ],
    );
  }

  /**
   * Makes the oldest `OWED_BATCH` owed events into pending deliveries; says how many it made.
   * A batch that comes back short leaves little: `settle` makes the rest.
   */
  deliverBatch(subscriptionId: string): Promise<number> {
    return this.alone(subscriptionId, async () => {
      const made = await this.deliveries.select(this.made(''), [
        subscriptionId,
        OWED_BATCH,
      ]);
      if (made.length === OWED_BATCH) {
        // past what is made; an event at the same instant as the last is not made twice
        const last = made.reduce(
          (latest, { createdAt }) => (createdAt > latest ? createdAt : latest),
          made[0].createdAt,
        );
        const $ = this.subscriptions.parameter;
        await this.subscriptions.execute(
          `UPDATE "webhook_subscriptions" SET "owed_since" = ${$(2)} WHERE "id" = ${$(1)} AND "owed_since" < ${$(2)}`,
          [subscriptionId, this.subscriptions.stored('owedSince', last)],
        );
      }
      return made.length;
    });
  }

  /**
   * For a paused receiver's probe: makes its oldest owed event into a delivery if it has no
   * pending delivery left to probe with (all given up, or refused).
   */
  deliverProbe(subscriptionId: string): Promise<number> {
    return this.alone(subscriptionId, async () => {
      const made = await this.deliveries.select(
        this.made(
          ` AND NOT EXISTS (SELECT 1 FROM "webhook_deliveries" p WHERE p."subscription_id" = s."id" AND p."status" = 'pending')`,
        ),
        [subscriptionId, 1],
      );
      return made.length;
    });
  }

  /**
   * Makes every event still owed into a delivery and ends the debt: from then on the trigger
   * fans each new event out to the subscription. On PostgreSQL no event may be written
   * meanwhile (SHARE lock on events, for this short transaction): one whose trigger still saw
   * the subscription owed, but committed after the last read here, would be lost.
   */
  settle(subscriptionId: string): Promise<number> {
    return this.alone(subscriptionId, async () => {
      if (this.postgres) {
        await this.deliveries.execute(`LOCK TABLE "events" IN SHARE MODE`, []);
      }
      const made = await this.deliveries.select(this.made(''), [
        subscriptionId,
        Number.MAX_SAFE_INTEGER,
      ]);
      await this.subscriptions.execute(
        `UPDATE "webhook_subscriptions" SET "owed_since" = NULL WHERE "id" = ${this.subscriptions.parameter(1)}`,
        [subscriptionId],
      );
      return made.length;
    });
  }

  /**
   * Runs `work` in a transaction that holds the subscription's row on PostgreSQL: two
   * instances paying one subscription at once take turns, and the second, reading after the
   * first committed (READ COMMITTED), does not make an event's delivery twice. On SQLite the
   * transaction alone does it: it holds the one connection.
   */
  private alone<T>(subscriptionId: string, work: () => Promise<T>): Promise<T> {
    if (!this.postgres) return this.dataSource.transaction(work);
    return this.dataSource.transaction('READ COMMITTED', async () => {
      await this.subscriptions.select(
        `SELECT "id" FROM "webhook_subscriptions" WHERE "id" = $1 FOR UPDATE`,
        [subscriptionId],
      );
      return work();
    });
  }

  /**
   * Events owed since before `olderThan` are given up, as retention gives up pending
   * deliveries past the retry window: each such subscription is owed from `olderThan` on.
   * Says how many subscriptions gave events up.
   */
  async giveUpBefore(olderThan: Date): Promise<number> {
    const $ = this.subscriptions.parameter;
    return this.subscriptions.execute(
      `UPDATE "webhook_subscriptions" SET "owed_since" = ${$(1)} WHERE "owed_since" < ${$(1)} AND "removed_at" IS NULL`,
      [this.subscriptions.stored('owedSince', olderThan)],
    );
  }
}
