import { MigrationInterface, QueryRunner } from 'typeorm';

const NOW = `strftime('%Y-%m-%d %H:%M:%f', 'now')`;

export class Webhooks1795656000000 implements MigrationInterface {
  name = 'Webhooks1795656000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "webhook_subscriptions" ("id" varchar PRIMARY KEY NOT NULL, "url" text NOT NULL, "secret" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "removed_at" datetime)`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_deliveries" ("id" varchar(40) PRIMARY KEY NOT NULL, "subscription_id" varchar(36) NOT NULL, "plant_id" bigint NOT NULL, "plant_name" text NOT NULL, "plant_tag" text, "status" varchar(16) NOT NULL, "attempts" integer NOT NULL, "next_attempt_at" datetime NOT NULL, "last_attempt_at" datetime, "last_status_code" integer, "last_error" text, "created_at" datetime NOT NULL)`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries" ("status", "next_attempt_at")`,
    );
    // the outbox row is written by the same statement as the plant: atomic with it, whatever
    // else runs on the connection
    await queryRunner.query(
      `CREATE TRIGGER "plants_enqueue_webhook_deliveries" AFTER INSERT ON "plants" FOR EACH ROW
       BEGIN
         INSERT INTO "webhook_deliveries" ("id", "subscription_id", "plant_id", "plant_name", "plant_tag", "status", "attempts", "next_attempt_at", "created_at")
         SELECT 'msg_' || lower(hex(randomblob(16))), "id", NEW."id", NEW."name", NEW."tag", 'pending', 0, ${NOW}, ${NOW}
         FROM "webhook_subscriptions" WHERE "removed_at" IS NULL;
       END`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "plants_enqueue_webhook_deliveries"`);
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_due"`);
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(`DROP TABLE "webhook_subscriptions"`);
  }
}
