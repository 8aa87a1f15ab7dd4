import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * For a service that runs for years: the indexes retention deletes by (events and deliveries
 * by age, deliveries by event), a due index that holds pending deliveries only, so that the
 * dispatcher's poll does not slow as delivered rows pile up, and each subscription's run of
 * failed attempts and pause (a receiver that keeps failing is paused, not hammered).
 */
export class RetentionAndPauses1795710000000 implements MigrationInterface {
  name = 'RetentionAndPauses1795710000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_due"`);
    await queryRunner.query(
      `DROP INDEX "UQ_webhook_subscriptions_active_slot"`,
    );
    await queryRunner.query(
      `CREATE TABLE "temporary_webhook_subscriptions" ("id" varchar(36) PRIMARY KEY NOT NULL, "url" text NOT NULL, "event_types" text, "secret" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "removed_at" datetime, "slot" integer, "consecutive_failures" integer NOT NULL DEFAULT (0), "paused_until" datetime, CONSTRAINT "CHK_webhook_subscriptions_active_has_slot" CHECK (("removed_at" IS NOT NULL OR "slot" IS NOT NULL)), CONSTRAINT "CHK_webhook_subscriptions_slot" CHECK (("slot" IS NULL OR ("slot" >= 1 AND "slot" <= 100))))`,
    );
    await queryRunner.query(
      `INSERT INTO "temporary_webhook_subscriptions"("id", "url", "event_types", "secret", "created_at", "removed_at", "slot") SELECT "id", "url", "event_types", "secret", "created_at", "removed_at", "slot" FROM "webhook_subscriptions"`,
    );
    await queryRunner.query(`DROP TABLE "webhook_subscriptions"`);
    await queryRunner.query(
      `ALTER TABLE "temporary_webhook_subscriptions" RENAME TO "webhook_subscriptions"`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_subscriptions_active_slot" ON "webhook_subscriptions" ("slot") WHERE "removed_at" IS NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_events_created_at" ON "events" ("created_at") `,
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
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_due"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_retention"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_event"`);
    await queryRunner.query(`DROP INDEX "IDX_events_created_at"`);
    await queryRunner.query(
      `DROP INDEX "UQ_webhook_subscriptions_active_slot"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" RENAME TO "temporary_webhook_subscriptions"`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_subscriptions" ("id" varchar(36) PRIMARY KEY NOT NULL, "url" text NOT NULL, "event_types" text, "secret" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "removed_at" datetime, "slot" integer, CONSTRAINT "CHK_webhook_subscriptions_active_has_slot" CHECK (("removed_at" IS NOT NULL OR "slot" IS NOT NULL)), CONSTRAINT "CHK_webhook_subscriptions_slot" CHECK (("slot" IS NULL OR ("slot" >= 1 AND "slot" <= 100))))`,
    );
    await queryRunner.query(
      `INSERT INTO "webhook_subscriptions"("id", "url", "event_types", "secret", "created_at", "removed_at", "slot") SELECT "id", "url", "event_types", "secret", "created_at", "removed_at", "slot" FROM "temporary_webhook_subscriptions"`,
    );
    await queryRunner.query(`DROP TABLE "temporary_webhook_subscriptions"`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_subscriptions_active_slot" ON "webhook_subscriptions" ("slot") WHERE "removed_at" IS NULL`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries" ("subscription_id", "status", "next_attempt_at") `,
    );
  }
}
