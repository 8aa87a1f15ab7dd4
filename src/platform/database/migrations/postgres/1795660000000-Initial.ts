import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The schema of the three SQLite migrations, for PostgreSQL, in one step: the same tables,
 * indexes and outbox trigger. Timestamps are timestamptz, so instants stay exact whatever the
 * time zones of the server and of the service.
 */
export class PostgresInitial1795660000000 implements MigrationInterface {
  name = 'PostgresInitial1795660000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "api_tokens" ("id" varchar(36) PRIMARY KEY NOT NULL, "name" text NOT NULL, "token_hash" varchar(64) NOT NULL, "scopes" text NOT NULL, "created_at" timestamptz NOT NULL DEFAULT now(), "expires_at" timestamptz, "revoked_at" timestamptz, "last_used_at" timestamptz)`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "IDX_bbd687a104e1921e6702c6e3aa" ON "api_tokens" ("token_hash")`,
    );
    await queryRunner.query(
      `CREATE TABLE "plants" ("id" bigint PRIMARY KEY NOT NULL, "name" text NOT NULL, "tag" text)`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_plants_tag_id" ON "plants" ("tag", "id")`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_subscriptions" ("id" varchar(36) PRIMARY KEY NOT NULL, "url" text NOT NULL, "secret" text NOT NULL, "created_at" timestamptz NOT NULL DEFAULT now(), "removed_at" timestamptz)`,
    );
    await queryRunner.query(
      `CREATE TABLE "webhook_deliveries" ("id" varchar(40) PRIMARY KEY NOT NULL, "subscription_id" varchar(36) NOT NULL, "plant_id" bigint NOT NULL, "plant_name" text NOT NULL, "plant_tag" text, "status" varchar(16) NOT NULL, "attempts" integer NOT NULL, "next_attempt_at" timestamptz NOT NULL, "last_attempt_at" timestamptz, "last_status_code" integer, "last_error" text, "created_at" timestamptz NOT NULL)`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries" ("status", "next_attempt_at")`,
    );
    // the outbox rows are written by the statement that inserts the plant (see WebhookDelivery)
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

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `DROP TRIGGER "plants_enqueue_webhook_deliveries" ON "plants"`,
    );
    await queryRunner.query(
      `DROP FUNCTION "plants_enqueue_webhook_deliveries"()`,
    );
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(`DROP TABLE "webhook_subscriptions"`);
    await queryRunner.query(`DROP TABLE "plants"`);
    await queryRunner.query(`DROP TABLE "api_tokens"`);
  }
}
