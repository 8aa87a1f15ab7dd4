import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  createEventTrigger,
  dropEventTrigger,
} from '../../../events/event-triggers';
import { PLANT_ADDED, PLANT_DELETED } from '../event-outbox-triggers';

/**
 * The SQLite EventOutbox migration for PostgreSQL: the `events` outbox written by triggers,
 * deliveries that point at an event, subscriptions that choose their event types. Existing
 * subscriptions keep receiving plant.added only; every existing delivery keeps its webhook-id,
 * state and body.
 */
export class PostgresEventOutbox1795670000000 implements MigrationInterface {
  name = 'PostgresEventOutbox1795670000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `DROP TRIGGER "plants_enqueue_webhook_deliveries" ON "plants"`,
    );
    await queryRunner.query(
      `DROP FUNCTION "plants_enqueue_webhook_deliveries"()`,
    );
    await queryRunner.query(
      `CREATE TABLE "events" ("id" varchar(36) PRIMARY KEY NOT NULL, "type" varchar(64) NOT NULL, "payload" text NOT NULL, "created_at" timestamptz NOT NULL)`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD COLUMN "event_types" text`,
    );
    await queryRunner.query(
      `UPDATE "webhook_subscriptions" SET "event_types" = 'plant.added'`,
    );
    await queryRunner.query(
      `INSERT INTO "events" ("id", "type", "payload", "created_at") SELECT 'evt_' || substr("id", 5), 'plant.added', json_build_object('id', "plant_id", 'name', "plant_name", 'tag', "plant_tag")::text, "created_at" FROM "webhook_deliveries"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD COLUMN "event_id" varchar(36)`,
    );
    await queryRunner.query(
      `UPDATE "webhook_deliveries" SET "event_id" = 'evt_' || substr("id", 5)`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ALTER COLUMN "event_id" SET NOT NULL`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" DROP COLUMN "plant_id", DROP COLUMN "plant_name", DROP COLUMN "plant_tag"`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_subscription" ON "webhook_deliveries" ("subscription_id", "created_at")`,
    );
    // what the event triggers ask before writing an event: webhook subscriptions are its
    // consumers for now
    await queryRunner.query(
      `CREATE VIEW "event_consumers" AS SELECT "event_types" FROM "webhook_subscriptions" WHERE "removed_at" IS NULL`,
    );
    // an event fans out into one delivery per subscription that wants it, in the statement
    // that wrote it; an event nobody wants (anymore) is not kept
    await queryRunner.query(
      `CREATE FUNCTION "events_enqueue_webhook_deliveries"() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
         SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), "id", NEW."id", 'pending', 0, NEW."created_at", NEW."created_at"
         FROM "webhook_subscriptions"
         WHERE "removed_at" IS NULL AND ("event_types" IS NULL OR position(',' || NEW."type" || ',' in ',' || "event_types" || ',') > 0);
         IF NOT FOUND THEN
           DELETE FROM "events" WHERE "id" = NEW."id";
         END IF;
         RETURN NULL;
       END $$`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "events_enqueue_webhook_deliveries" AFTER INSERT ON "events" FOR EACH ROW EXECUTE FUNCTION "events_enqueue_webhook_deliveries"()`,
    );
    await createEventTrigger(queryRunner, PLANT_ADDED);
    await createEventTrigger(queryRunner, PLANT_DELETED);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await dropEventTrigger(queryRunner, PLANT_DELETED);
    await dropEventTrigger(queryRunner, PLANT_ADDED);
    await queryRunner.query(
      `DROP TRIGGER "events_enqueue_webhook_deliveries" ON "events"`,
    );
    await queryRunner.query(
      `DROP FUNCTION "events_enqueue_webhook_deliveries"()`,
    );
    await queryRunner.query(`DROP VIEW "event_consumers"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_subscription"`);
    // only plant.added existed before: other deliveries have no place in the old table
    await queryRunner.query(
      `DELETE FROM "webhook_deliveries" d USING "events" e WHERE e."id" = d."event_id" AND e."type" <> 'plant.added'`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD COLUMN "plant_id" bigint, ADD COLUMN "plant_name" text, ADD COLUMN "plant_tag" text`,
    );
    await queryRunner.query(
      `UPDATE "webhook_deliveries" d SET "plant_id" = (e."payload"::json->>'id')::bigint, "plant_name" = e."payload"::json->>'name', "plant_tag" = e."payload"::json->>'tag' FROM "events" e WHERE e."id" = d."event_id"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ALTER COLUMN "plant_id" SET NOT NULL, ALTER COLUMN "plant_name" SET NOT NULL, DROP COLUMN "event_id"`,
    );
    await queryRunner.query(`DROP TABLE "events"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "event_types"`,
    );
    await queryRunner.query(
      `CREATE FUNCTION "plants_enqueue_webhook_deliveries"() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         INSERT INTO "webhook_deliveries" ("id", "subscription_id", "plant_id", "plant_name", "plant_tag", "status", "attempts", "next_attempt_at", "created_at")
         SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), "id", NEW."id", NEW."name", NEW."tag", 'pending', 0, now(), now()
         FROM "webhook_subscriptions" WHERE "removed_at" IS NULL;
         RETURN NEW;
       END $$`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "plants_enqueue_webhook_deliveries" AFTER INSERT ON "plants" FOR EACH ROW EXECUTE FUNCTION "plants_enqueue_webhook_deliveries"()`,
    );
  }
}
