import { MigrationInterface, QueryRunner } from 'typeorm';

const DELIVERY_ID = (created: string) =>
  `'msg_' || lpad(to_hex(floor(extract(epoch FROM ${created}) * 1000)::bigint), 12, '0') || substr(md5(gen_random_uuid()::text), 1, 20)`;
const WANTS_EVENT = (type: string) =>
  `"removed_at" IS NULL AND ("event_types" IS NULL OR position(',' || ${type} || ',' in ',' || "event_types" || ',') > 0)`;
/** An active subscription `s` that receives the type. */
const WANTS = (type: string) =>
  `s."removed_at" IS NULL AND (s."event_types" IS NULL OR position(',' || ${type} || ',' in ',' || s."event_types" || ',') > 0)`;

/** The fan-out function of the OwedEvents migration, which `down` puts back. */
const OWED_FAN_OUT = `CREATE OR REPLACE FUNCTION "events_enqueue_webhook_deliveries"() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
         SELECT ${DELIVERY_ID('NEW."created_at"')}, "id", NEW."id", 'pending', 0, NEW."created_at", NEW."created_at"
         FROM "webhook_subscriptions"
         WHERE ${WANTS_EVENT('NEW."type"')} AND "owed_since" IS NULL;
         IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM "webhook_subscriptions" WHERE ${WANTS_EVENT('NEW."type"')} AND "owed_since" IS NOT NULL) THEN
           DELETE FROM "events" WHERE "id" = NEW."id";
         END IF;
         RETURN NULL;
       END $$`;

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
    await queryRunner.query(
      `DROP TRIGGER "events_enqueue_webhook_deliveries" ON "events"`,
    );
    await queryRunner.query(
      `DROP FUNCTION "events_enqueue_webhook_deliveries"()`,
    );
    // what a paused subscription was owed becomes its pending deliveries
    await queryRunner.query(
      `INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
       SELECT ${DELIVERY_ID('e."created_at"')}, s."id", e."id", 'pending', 0, e."created_at", e."created_at"
       FROM "webhook_subscriptions" s JOIN "events" e ON e."created_at" >= s."owed_since"
       WHERE s."owed_since" IS NOT NULL AND ${WANTS(`e."type"`)}
       AND NOT EXISTS (SELECT 1 FROM "webhook_deliveries" d WHERE d."event_id" = e."id" AND d."subscription_id" = s."id")`,
    );
    await queryRunner.query(
      `CREATE TABLE "event_log" ("id" smallint NOT NULL, "last_seq" bigint NOT NULL, CONSTRAINT "CHK_event_log_one_row" CHECK ("id" = 1), CONSTRAINT "PK_d8ccd9b5b44828ea378dd37e691" PRIMARY KEY ("id"))`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "owed_since"`,
    );
    await queryRunner.query(`ALTER TABLE "events" ADD "seq" bigint`);
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD "claim_token" character varying(24)`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD "pause_level" integer NOT NULL DEFAULT '0'`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD "receiver_epoch" integer NOT NULL DEFAULT '0'`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD "probe_until" TIMESTAMP WITH TIME ZONE`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD "cursor" bigint NOT NULL DEFAULT '0'`,
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
      `CREATE INDEX "IDX_events_unsequenced" ON "events"  ("created_at", "id") WHERE "seq" IS NULL`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_events_seq" ON "events"  ("seq") WHERE "seq" IS NOT NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    // the events past a cursor become pending deliveries, as the trigger would have made them
    await queryRunner.query(
      `INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
       SELECT ${DELIVERY_ID('e."created_at"')}, s."id", e."id", 'pending', 0, e."created_at", e."created_at"
       FROM "webhook_subscriptions" s JOIN "events" e ON e."seq" > s."cursor"
       WHERE ${WANTS(`e."type"`)}`,
    );
    await queryRunner.query(`DROP INDEX "public"."UQ_events_seq"`);
    await queryRunner.query(`DROP INDEX "public"."IDX_events_unsequenced"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "cursor"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "probe_until"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "receiver_epoch"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "pause_level"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" DROP COLUMN "claim_token"`,
    );
    await queryRunner.query(`ALTER TABLE "events" DROP COLUMN "seq"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD "owed_since" TIMESTAMP WITH TIME ZONE`,
    );
    await queryRunner.query(`DROP TABLE "event_log"`);
    await queryRunner.query(OWED_FAN_OUT);
    await queryRunner.query(
      `CREATE TRIGGER "events_enqueue_webhook_deliveries" AFTER INSERT ON "events" FOR EACH ROW EXECUTE FUNCTION "events_enqueue_webhook_deliveries"()`,
    );
  }
}
