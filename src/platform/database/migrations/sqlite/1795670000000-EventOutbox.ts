import { MigrationInterface, QueryRunner } from 'typeorm';
import {
  createEventTrigger,
  dropEventTrigger,
} from '../../../events/event-triggers';
import { PLANT_ADDED, PLANT_DELETED } from '../event-outbox-triggers';

const NOW = `strftime('%Y-%m-%d %H:%M:%f', 'now')`;

/** Which subscriptions want an event: every type when `event_types` is NULL. */
const WANTS_EVENT = `"removed_at" IS NULL AND ("event_types" IS NULL OR instr(',' || "event_types" || ',', ',' || NEW."type" || ',') > 0)`;

/**
 * Events any module can publish: the `events` outbox, written by a trigger on the changed
 * table, and deliveries that point at an event instead of copying a plant. Existing
 * subscriptions keep receiving plant.added only (what they subscribed to); every existing
 * delivery keeps its webhook-id, state and body, its plant moving into an event of its own.
 *
 * Also rebuilds api_tokens and webhook_subscriptions with the varchar(36) ids their entities
 * declare, so that `npm run migration:generate` finds nothing to change. The tables are
 * rebuilt the way TypeORM rebuilds SQLite tables, with the statements it would write.
 */
export class EventOutbox1795670000000 implements MigrationInterface {
  name = 'EventOutbox1795670000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "plants_enqueue_webhook_deliveries"`);

    await queryRunner.query(
      `CREATE TABLE "temporary_api_tokens" ("id" varchar(36) PRIMARY KEY NOT NULL, "name" text NOT NULL, "token_hash" varchar(64) NOT NULL, "scopes" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "expires_at" datetime, "revoked_at" datetime, "last_used_at" datetime)`,
    );
    await queryRunner.query(
      `INSERT INTO "temporary_api_tokens" ("id", "name", "token_hash", "scopes", "created_at", "expires_at", "revoked_at", "last_used_at") SELECT "id", "name", "token_hash", "scopes", "created_at", "expires_at", "revoked_at", "last_used_at" FROM "api_tokens"`,
    );
    await queryRunner.query(`DROP TABLE "api_tokens"`);
    await queryRunner.query(
      `ALTER TABLE "temporary_api_tokens" RENAME TO "api_tokens"`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "IDX_bbd687a104e1921e6702c6e3aa" ON "api_tokens" ("token_hash") `,
    );

    await queryRunner.query(
      `CREATE TABLE "temporary_webhook_subscriptions" ("id" varchar(36) PRIMARY KEY NOT NULL, "url" text NOT NULL, "event_types" text, "secret" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "removed_at" datetime)`,
    );
    await queryRunner.query(
      `INSERT INTO "temporary_webhook_subscriptions" ("id", "url", "event_types", "secret", "created_at", "removed_at") SELECT "id", "url", 'plant.added', "secret", "created_at", "removed_at" FROM "webhook_subscriptions"`,
    );
    await queryRunner.query(`DROP TABLE "webhook_subscriptions"`);
    await queryRunner.query(
      `ALTER TABLE "temporary_webhook_subscriptions" RENAME TO "webhook_subscriptions"`,
    );

    await queryRunner.query(
      `CREATE TABLE "events" ("id" varchar(36) PRIMARY KEY NOT NULL, "type" varchar(64) NOT NULL, "payload" text NOT NULL, "created_at" datetime NOT NULL)`,
    );
    await queryRunner.query(
      `INSERT INTO "events" ("id", "type", "payload", "created_at") SELECT 'evt_' || substr("id", 5), 'plant.added', json_object('id', "plant_id", 'name', "plant_name", 'tag', "plant_tag"), "created_at" FROM "webhook_deliveries"`,
    );
    await queryRunner.query(
      `CREATE TABLE "temporary_webhook_deliveries" ("id" varchar(40) PRIMARY KEY NOT NULL, "subscription_id" varchar(36) NOT NULL, "event_id" varchar(36) NOT NULL, "status" varchar(16) NOT NULL, "attempts" integer NOT NULL, "next_attempt_at" datetime NOT NULL, "last_attempt_at" datetime, "last_status_code" integer, "last_error" text, "created_at" datetime NOT NULL, "claimed_until" datetime)`,
    );
    await queryRunner.query(
      `INSERT INTO "temporary_webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "last_attempt_at", "last_status_code", "last_error", "created_at", "claimed_until") SELECT "id", "subscription_id", 'evt_' || substr("id", 5), "status", "attempts", "next_attempt_at", "last_attempt_at", "last_status_code", "last_error", "created_at", "claimed_until" FROM "webhook_deliveries"`,
    );
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(
      `ALTER TABLE "temporary_webhook_deliveries" RENAME TO "webhook_deliveries"`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_subscription" ON "webhook_deliveries" ("subscription_id", "created_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries" ("status", "next_attempt_at") `,
    );

    // what the event triggers ask before writing an event: webhook subscriptions are its
    // consumers for now
    await queryRunner.query(
      `CREATE VIEW "event_consumers" AS SELECT "event_types" FROM "webhook_subscriptions" WHERE "removed_at" IS NULL`,
    );
    // an event fans out into one delivery per subscription that wants it, in the statement
    // that wrote it; an event nobody wants (anymore) is not kept
    await queryRunner.query(
      `CREATE TRIGGER "events_enqueue_webhook_deliveries" AFTER INSERT ON "events" FOR EACH ROW
       BEGIN
         INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
         SELECT 'msg_' || lower(hex(randomblob(16))), "id", NEW."id", 'pending', 0, NEW."created_at", NEW."created_at"
         FROM "webhook_subscriptions" WHERE ${WANTS_EVENT};
         DELETE FROM "events" WHERE "id" = NEW."id" AND changes() = 0;
       END`,
    );
    await createEventTrigger(queryRunner, PLANT_ADDED);
    await createEventTrigger(queryRunner, PLANT_DELETED);
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await dropEventTrigger(queryRunner, PLANT_DELETED);
    await dropEventTrigger(queryRunner, PLANT_ADDED);
    await queryRunner.query(`DROP TRIGGER "events_enqueue_webhook_deliveries"`);
    await queryRunner.query(`DROP VIEW "event_consumers"`);
    await queryRunner.query(
      `CREATE TABLE "temporary_webhook_deliveries" ("id" varchar(40) PRIMARY KEY NOT NULL, "subscription_id" varchar(36) NOT NULL, "plant_id" bigint NOT NULL, "plant_name" text NOT NULL, "plant_tag" text, "status" varchar(16) NOT NULL, "attempts" integer NOT NULL, "next_attempt_at" datetime NOT NULL, "last_attempt_at" datetime, "last_status_code" integer, "last_error" text, "created_at" datetime NOT NULL, "claimed_until" datetime)`,
    );
    // only plant.added existed before: other deliveries have no place in the old table
    await queryRunner.query(
      `INSERT INTO "temporary_webhook_deliveries" SELECT d."id", d."subscription_id", json_extract(e."payload", '$.id'), json_extract(e."payload", '$.name'), json_extract(e."payload", '$.tag'), d."status", d."attempts", d."next_attempt_at", d."last_attempt_at", d."last_status_code", d."last_error", d."created_at", d."claimed_until" FROM "webhook_deliveries" d JOIN "events" e ON e."id" = d."event_id" WHERE e."type" = 'plant.added'`,
    );
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(
      `ALTER TABLE "temporary_webhook_deliveries" RENAME TO "webhook_deliveries"`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries" ("status", "next_attempt_at")`,
    );
    await queryRunner.query(`DROP TABLE "events"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "event_types"`,
    );
    await queryRunner.query(
      `CREATE TRIGGER "plants_enqueue_webhook_deliveries" AFTER INSERT ON "plants" FOR EACH ROW
       BEGIN
         INSERT INTO "webhook_deliveries" ("id", "subscription_id", "plant_id", "plant_name", "plant_tag", "status", "attempts", "next_attempt_at", "created_at")
         SELECT 'msg_' || lower(hex(randomblob(16))), "id", NEW."id", NEW."name", NEW."tag", 'pending', 0, ${NOW}, ${NOW}
         FROM "webhook_subscriptions" WHERE "removed_at" IS NULL;
       END`,
    );
  }
}
