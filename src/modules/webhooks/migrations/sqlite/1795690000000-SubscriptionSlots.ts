import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The cap on active subscriptions becomes a constraint: each active subscription holds a slot,
 * 1 to 100, unique among the active ones. The oldest 100 get theirs in the order they were
 * made; any past the cap (concurrent creates could pass the old count-then-insert check) are
 * removed as `DELETE` would remove them: secret erased, pending deliveries cancelled.
 * SQLite adds CHECK constraints by rebuilding the table, as TypeORM does.
 */
export class SubscriptionSlots1795690000000 implements MigrationInterface {
  name = 'SubscriptionSlots1795690000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `UPDATE "webhook_subscriptions" SET "removed_at" = strftime('%Y-%m-%d %H:%M:%f', 'now'), "secret" = '' WHERE "id" IN (SELECT "id" FROM (SELECT "id", row_number() OVER (ORDER BY "created_at", "id") AS "n" FROM "webhook_subscriptions" WHERE "removed_at" IS NULL) WHERE "n" > 100)`,
    );
    await queryRunner.query(
      `UPDATE "webhook_deliveries" SET "status" = 'cancelled' WHERE "status" = 'pending' AND "subscription_id" IN (SELECT "id" FROM "webhook_subscriptions" WHERE "removed_at" IS NOT NULL)`,
    );
    await queryRunner.query(
      `CREATE TABLE "temporary_webhook_subscriptions" ("id" varchar(36) PRIMARY KEY NOT NULL, "url" text NOT NULL, "event_types" text, "secret" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "removed_at" datetime, "slot" integer, CONSTRAINT "CHK_webhook_subscriptions_active_has_slot" CHECK ("removed_at" IS NOT NULL OR "slot" IS NOT NULL), CONSTRAINT "CHK_webhook_subscriptions_slot" CHECK ("slot" IS NULL OR ("slot" >= 1 AND "slot" <= 100)))`,
    );
    await queryRunner.query(
      `INSERT INTO "temporary_webhook_subscriptions"("id", "url", "event_types", "secret", "created_at", "removed_at", "slot") SELECT "id", "url", "event_types", "secret", "created_at", "removed_at", CASE WHEN "removed_at" IS NULL THEN row_number() OVER (PARTITION BY "removed_at" IS NULL ORDER BY "created_at", "id") END FROM "webhook_subscriptions"`,
    );
    await queryRunner.query(`DROP TABLE "webhook_subscriptions"`);
    await queryRunner.query(
      `ALTER TABLE "temporary_webhook_subscriptions" RENAME TO "webhook_subscriptions"`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_subscriptions_active_slot" ON "webhook_subscriptions" ("slot") WHERE "removed_at" IS NULL`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `DROP INDEX "UQ_webhook_subscriptions_active_slot"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" RENAME TO "temporary_webhook_subscriptions"`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_subscriptions" ("id" varchar(36) PRIMARY KEY NOT NULL, "url" text NOT NULL, "event_types" text, "secret" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "removed_at" datetime)`,
    );
    await queryRunner.query(
      `INSERT INTO "webhook_subscriptions"("id", "url", "event_types", "secret", "created_at", "removed_at") SELECT "id", "url", "event_types", "secret", "created_at", "removed_at" FROM "temporary_webhook_subscriptions"`,
    );
    await queryRunner.query(`DROP TABLE "temporary_webhook_subscriptions"`);
  }
}
