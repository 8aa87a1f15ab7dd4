import { MigrationInterface, QueryRunner } from 'typeorm';

const DELIVERY_ID = (created: string) =>
  `'msg_' || printf('%012x', CAST(round((julianday(${created}) - 2440587.5) * 86400000) AS INTEGER)) || lower(hex(randomblob(10)))`;
/** An active subscription `s` that receives the type. */
const WANTS = (type: string) =>
  `s."removed_at" IS NULL AND (s."event_types" IS NULL OR instr(',' || s."event_types" || ',', ',' || ${type} || ',') > 0)`;
const WANTS_EVENT = `"removed_at" IS NULL AND ("event_types" IS NULL OR instr(',' || "event_types" || ',', ',' || NEW."type" || ',') > 0)`;

/** The fan-out trigger of the OwedEvents migration, which `down` puts back. */
const OWED_FAN_OUT = `CREATE TRIGGER "events_enqueue_webhook_deliveries" AFTER INSERT ON "events" FOR EACH ROW
       BEGIN
         INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
         SELECT ${DELIVERY_ID('NEW."created_at"')}, "id", NEW."id", 'pending', 0, NEW."created_at", NEW."created_at"
         FROM "webhook_subscriptions" WHERE ${WANTS_EVENT} AND "owed_since" IS NULL;
         DELETE FROM "events" WHERE "id" = NEW."id" AND changes() = 0 AND NOT EXISTS (SELECT 1 FROM "webhook_subscriptions" WHERE ${WANTS_EVENT} AND "owed_since" IS NOT NULL);
       END`;

/**
 * On SQLite one transaction writes at a time, so an event takes its place in the log as it is
 * written: this trigger, rather than the dispatcher's batches, which held the one connection
 * while requests waited (bench/README.md, "Issue 35"). An event written with its place keeps it.
 */
const TAKE_PLACE = `CREATE TRIGGER "events_take_their_place" AFTER INSERT ON "events" FOR EACH ROW WHEN NEW."seq" IS NULL
       BEGIN
         UPDATE "event_log" SET "last_seq" = "last_seq" + 1 WHERE "id" = 1;
         UPDATE "events" SET "seq" = (SELECT "last_seq" FROM "event_log" WHERE "id" = 1) WHERE "rowid" = NEW."rowid";
       END`;

/**
 * Webhook delivery, bounded by construction (docs/decisions.md, "Webhook delivery"): events
 * form a log with places (`seq`, given by the dispatcher once committed, `event_log` the
 * head), each subscription a cursor into it, and the dispatcher makes the deliveries from the
 * log as it has room; requests no longer write a delivery row per subscription (the fan-out
 * trigger goes). The receiver's state gains its pause level, its epoch and its probe.
 *
 * Nothing is lost: the events owed to a paused subscription become its pending deliveries,
 * every event gets its place in the order it was written, and every cursor starts at the head,
 * past what already had its delivery.
 */
export class DeliveryCursors1795830000000 implements MigrationInterface {
  name = 'DeliveryCursors1795830000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "events_enqueue_webhook_deliveries"`);
    // what a paused subscription was owed becomes its pending deliveries
    await queryRunner.query(`INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
       SELECT ${DELIVERY_ID('e."created_at"')}, s."id", e."id", 'pending', 0, e."created_at", e."created_at"
       FROM "webhook_subscriptions" s JOIN "events" e ON e."created_at" >= s."owed_since"
       WHERE s."owed_since" IS NOT NULL AND ${WANTS('e."type"')}
       AND NOT EXISTS (SELECT 1 FROM "webhook_deliveries" d WHERE d."event_id" = e."id" AND d."subscription_id" = s."id")`);
    await queryRunner.query(
      `CREATE TABLE "event_log" ("id" smallint PRIMARY KEY NOT NULL, "last_seq" bigint NOT NULL, CONSTRAINT "CHK_event_log_one_row" CHECK ("id" = 1))`,
    );
    await queryRunner.query(
      `DROP INDEX "UQ_webhook_subscriptions_active_slot"`,
    );
    await queryRunner.query(
      `CREATE TABLE "temporary_webhook_subscriptions" ("id" varchar(36) PRIMARY KEY NOT NULL, "url" text NOT NULL, "event_types" text, "secret" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "removed_at" datetime, "slot" integer, "consecutive_failures" integer NOT NULL DEFAULT (0), "paused_until" datetime, CONSTRAINT "CHK_webhook_subscriptions_active_has_slot" CHECK ((("removed_at" IS NOT NULL OR "slot" IS NOT NULL))), CONSTRAINT "CHK_webhook_subscriptions_slot" CHECK ((("slot" IS NULL OR ("slot" >= 1 AND "slot" <= 100)))))`,
    );
    await queryRunner.query(
      `INSERT INTO "temporary_webhook_subscriptions"("id", "url", "event_types", "secret", "created_at", "removed_at", "slot", "consecutive_failures", "paused_until") SELECT "id", "url", "event_types", "secret", "created_at", "removed_at", "slot", "consecutive_failures", "paused_until" FROM "webhook_subscriptions"`,
    );
    await queryRunner.query(`DROP TABLE "webhook_subscriptions"`);
    await queryRunner.query(
      `ALTER TABLE "temporary_webhook_subscriptions" RENAME TO "webhook_subscriptions"`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_subscriptions_active_slot" ON "webhook_subscriptions" ("slot") WHERE "removed_at" IS NULL`,
    );
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_due"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_retention"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_event"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_subscription"`);
    await queryRunner.query(
      `CREATE TABLE "temporary_webhook_deliveries" ("id" varchar(40) PRIMARY KEY NOT NULL, "subscription_id" varchar(36) NOT NULL, "event_id" varchar(36) NOT NULL, "status" varchar(16) NOT NULL, "attempts" integer NOT NULL, "next_attempt_at" datetime NOT NULL, "last_attempt_at" datetime, "last_status_code" integer, "last_error" text, "created_at" datetime NOT NULL, "claimed_until" datetime, "claim_token" varchar(24))`,
    );
    await queryRunner.query(
      `INSERT INTO "temporary_webhook_deliveries"("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "last_attempt_at", "last_status_code", "last_error", "created_at", "claimed_until") SELECT "id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "last_attempt_at", "last_status_code", "last_error", "created_at", "claimed_until" FROM "webhook_deliveries"`,
    );
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(
      `ALTER TABLE "temporary_webhook_deliveries" RENAME TO "webhook_deliveries"`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries" ("subscription_id", "next_attempt_at") WHERE "status" = 'pending'`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_retention" ON "webhook_deliveries" ("status", "created_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_event" ON "webhook_deliveries" ("event_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_subscription" ON "webhook_deliveries" ("subscription_id", "created_at") `,
    );
    await queryRunner.query(
      `DROP INDEX "UQ_webhook_subscriptions_active_slot"`,
    );
    await queryRunner.query(
      `CREATE TABLE "temporary_webhook_subscriptions" ("id" varchar(36) PRIMARY KEY NOT NULL, "url" text NOT NULL, "event_types" text, "secret" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "removed_at" datetime, "slot" integer, "consecutive_failures" integer NOT NULL DEFAULT (0), "paused_until" datetime, "pause_level" integer NOT NULL DEFAULT (0), "receiver_epoch" integer NOT NULL DEFAULT (0), "probe_until" datetime, "cursor" bigint NOT NULL DEFAULT (0), CONSTRAINT "CHK_webhook_subscriptions_active_has_slot" CHECK ((("removed_at" IS NOT NULL OR "slot" IS NOT NULL))), CONSTRAINT "CHK_webhook_subscriptions_slot" CHECK ((("slot" IS NULL OR ("slot" >= 1 AND "slot" <= 100)))))`,
    );
    await queryRunner.query(
      `INSERT INTO "temporary_webhook_subscriptions"("id", "url", "event_types", "secret", "created_at", "removed_at", "slot", "consecutive_failures", "paused_until") SELECT "id", "url", "event_types", "secret", "created_at", "removed_at", "slot", "consecutive_failures", "paused_until" FROM "webhook_subscriptions"`,
    );
    await queryRunner.query(`DROP TABLE "webhook_subscriptions"`);
    await queryRunner.query(
      `ALTER TABLE "temporary_webhook_subscriptions" RENAME TO "webhook_subscriptions"`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_subscriptions_active_slot" ON "webhook_subscriptions" ("slot") WHERE "removed_at" IS NULL`,
    );
    await queryRunner.query(`DROP INDEX "IDX_events_created_at"`);
    await queryRunner.query(
      `CREATE TABLE "temporary_events" ("id" varchar(36) PRIMARY KEY NOT NULL, "type" varchar(64) NOT NULL, "payload" text NOT NULL, "created_at" datetime NOT NULL, "seq" bigint)`,
    );
    await queryRunner.query(
      `INSERT INTO "temporary_events"("id", "type", "payload", "created_at") SELECT "id", "type", "payload", "created_at" FROM "events"`,
    );
    await queryRunner.query(`DROP TABLE "events"`);
    await queryRunner.query(
      `ALTER TABLE "temporary_events" RENAME TO "events"`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_events_created_at" ON "events" ("created_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_events_unsequenced" ON "events" ("created_at", "id") WHERE "seq" IS NULL`,
    );
    // every event its place, in the order written; the head; every cursor at the head
    await queryRunner.query(
      `UPDATE "events" SET "seq" = "numbered"."seq" FROM (SELECT "id", row_number() OVER (ORDER BY "created_at", "id") AS "seq" FROM "events") AS "numbered" WHERE "events"."id" = "numbered"."id"`,
    );
    await queryRunner.query(
      `INSERT INTO "event_log" ("id", "last_seq") SELECT 1, COALESCE(MAX("seq"), 0) FROM "events"`,
    );
    await queryRunner.query(
      `UPDATE "webhook_subscriptions" SET "cursor" = (SELECT "last_seq" FROM "event_log")`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_events_seq" ON "events" ("seq") WHERE "seq" IS NOT NULL`,
    );
    await queryRunner.query(TAKE_PLACE);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "events_take_their_place"`);
    // the events past a cursor become pending deliveries, as the trigger would have made them
    await queryRunner.query(`INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
       SELECT ${DELIVERY_ID('e."created_at"')}, s."id", e."id", 'pending', 0, e."created_at", e."created_at"
       FROM "webhook_subscriptions" s JOIN "events" e ON e."seq" > s."cursor"
       WHERE ${WANTS('e."type"')}`);
    await queryRunner.query(`DROP INDEX "UQ_events_seq"`);
    await queryRunner.query(`DROP INDEX "IDX_events_unsequenced"`);
    await queryRunner.query(`DROP INDEX "IDX_events_created_at"`);
    await queryRunner.query(
      `ALTER TABLE "events" RENAME TO "temporary_events"`,
    );
    await queryRunner.query(
      `CREATE TABLE "events" ("id" varchar(36) PRIMARY KEY NOT NULL, "type" varchar(64) NOT NULL, "payload" text NOT NULL, "created_at" datetime NOT NULL)`,
    );
    await queryRunner.query(
      `INSERT INTO "events"("id", "type", "payload", "created_at") SELECT "id", "type", "payload", "created_at" FROM "temporary_events"`,
    );
    await queryRunner.query(`DROP TABLE "temporary_events"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_events_created_at" ON "events" ("created_at") `,
    );
    await queryRunner.query(
      `DROP INDEX "UQ_webhook_subscriptions_active_slot"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" RENAME TO "temporary_webhook_subscriptions"`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_subscriptions" ("id" varchar(36) PRIMARY KEY NOT NULL, "url" text NOT NULL, "event_types" text, "secret" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "removed_at" datetime, "slot" integer, "consecutive_failures" integer NOT NULL DEFAULT (0), "paused_until" datetime, CONSTRAINT "CHK_webhook_subscriptions_active_has_slot" CHECK ((("removed_at" IS NOT NULL OR "slot" IS NOT NULL))), CONSTRAINT "CHK_webhook_subscriptions_slot" CHECK ((("slot" IS NULL OR ("slot" >= 1 AND "slot" <= 100)))))`,
    );
    await queryRunner.query(
      `INSERT INTO "webhook_subscriptions"("id", "url", "event_types", "secret", "created_at", "removed_at", "slot", "consecutive_failures", "paused_until") SELECT "id", "url", "event_types", "secret", "created_at", "removed_at", "slot", "consecutive_failures", "paused_until" FROM "temporary_webhook_subscriptions"`,
    );
    await queryRunner.query(`DROP TABLE "temporary_webhook_subscriptions"`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_subscriptions_active_slot" ON "webhook_subscriptions" ("slot") WHERE "removed_at" IS NULL`,
    );
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_subscription"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_event"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_retention"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_due"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" RENAME TO "temporary_webhook_deliveries"`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_deliveries" ("id" varchar(40) PRIMARY KEY NOT NULL, "subscription_id" varchar(36) NOT NULL, "event_id" varchar(36) NOT NULL, "status" varchar(16) NOT NULL, "attempts" integer NOT NULL, "next_attempt_at" datetime NOT NULL, "last_attempt_at" datetime, "last_status_code" integer, "last_error" text, "created_at" datetime NOT NULL, "claimed_until" datetime)`,
    );
    await queryRunner.query(
      `INSERT INTO "webhook_deliveries"("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "last_attempt_at", "last_status_code", "last_error", "created_at", "claimed_until") SELECT "id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "last_attempt_at", "last_status_code", "last_error", "created_at", "claimed_until" FROM "temporary_webhook_deliveries"`,
    );
    await queryRunner.query(`DROP TABLE "temporary_webhook_deliveries"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_subscription" ON "webhook_deliveries" ("subscription_id", "created_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_event" ON "webhook_deliveries" ("event_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_retention" ON "webhook_deliveries" ("status", "created_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries" ("subscription_id", "next_attempt_at") WHERE "status" = 'pending'`,
    );
    await queryRunner.query(
      `DROP INDEX "UQ_webhook_subscriptions_active_slot"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" RENAME TO "temporary_webhook_subscriptions"`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_subscriptions" ("id" varchar(36) PRIMARY KEY NOT NULL, "url" text NOT NULL, "event_types" text, "secret" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "removed_at" datetime, "slot" integer, "consecutive_failures" integer NOT NULL DEFAULT (0), "paused_until" datetime, "owed_since" datetime, CONSTRAINT "CHK_webhook_subscriptions_active_has_slot" CHECK ((("removed_at" IS NOT NULL OR "slot" IS NOT NULL))), CONSTRAINT "CHK_webhook_subscriptions_slot" CHECK ((("slot" IS NULL OR ("slot" >= 1 AND "slot" <= 100)))))`,
    );
    await queryRunner.query(
      `INSERT INTO "webhook_subscriptions"("id", "url", "event_types", "secret", "created_at", "removed_at", "slot", "consecutive_failures", "paused_until") SELECT "id", "url", "event_types", "secret", "created_at", "removed_at", "slot", "consecutive_failures", "paused_until" FROM "temporary_webhook_subscriptions"`,
    );
    await queryRunner.query(`DROP TABLE "temporary_webhook_subscriptions"`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_subscriptions_active_slot" ON "webhook_subscriptions" ("slot") WHERE "removed_at" IS NULL`,
    );
    await queryRunner.query(`DROP TABLE "event_log"`);
    await queryRunner.query(OWED_FAN_OUT);
  }
}
