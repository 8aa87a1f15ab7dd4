import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The cap on active subscriptions becomes a constraint: each active subscription holds a slot,
 * 1 to 100, unique among the active ones. The oldest 100 get theirs in the order they were
 * made; any past the cap (concurrent creates passed the old count-then-insert check) are
 * removed as `DELETE` would remove them: secret erased, pending deliveries cancelled.
 */
export class SubscriptionSlots1795690000000 implements MigrationInterface {
  name = 'SubscriptionSlots1795690000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD "slot" integer`,
    );
    await queryRunner.query(
      `UPDATE "webhook_subscriptions" AS "s" SET "slot" = "r"."n" FROM (SELECT "id", row_number() OVER (ORDER BY "created_at", "id") AS "n" FROM "webhook_subscriptions" WHERE "removed_at" IS NULL) AS "r" WHERE "s"."id" = "r"."id"`,
    );
    await queryRunner.query(
      `UPDATE "webhook_subscriptions" SET "removed_at" = now(), "secret" = '', "slot" = NULL WHERE "slot" > 100`,
    );
    await queryRunner.query(
      `UPDATE "webhook_deliveries" SET "status" = 'cancelled' WHERE "status" = 'pending' AND "subscription_id" IN (SELECT "id" FROM "webhook_subscriptions" WHERE "removed_at" IS NOT NULL)`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "UQ_webhook_subscriptions_active_slot" ON "webhook_subscriptions" ("slot") WHERE "removed_at" IS NULL`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD CONSTRAINT "CHK_webhook_subscriptions_active_has_slot" CHECK ("removed_at" IS NOT NULL OR "slot" IS NOT NULL)`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD CONSTRAINT "CHK_webhook_subscriptions_slot" CHECK ("slot" IS NULL OR ("slot" >= 1 AND "slot" <= 100))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP CONSTRAINT "CHK_webhook_subscriptions_slot"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP CONSTRAINT "CHK_webhook_subscriptions_active_has_slot"`,
    );
    await queryRunner.query(
      `DROP INDEX "public"."UQ_webhook_subscriptions_active_slot"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "slot"`,
    );
  }
}
