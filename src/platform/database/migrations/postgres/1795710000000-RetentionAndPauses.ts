import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * For a service that runs for years: the indexes retention deletes by (events and deliveries
 * by age, deliveries by event), a due index that holds pending deliveries only, so that the
 * dispatcher's poll does not slow as delivered rows pile up, and each subscription's run of
 * failed attempts and pause (a receiver that keeps failing is paused, not hammered).
 * PostgreSQL vacuums the deliveries after 2 % of them changed rather than 20 %: the dead entries
 * a delivered row leaves behind are gone within minutes, not after millions of rows.
 */
export class RetentionAndPauses1795710000000 implements MigrationInterface {
  name = 'RetentionAndPauses1795710000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "public"."IDX_webhook_deliveries_due"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD "consecutive_failures" integer NOT NULL DEFAULT '0'`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD "paused_until" TIMESTAMP WITH TIME ZONE`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_events_created_at" ON "events"  ("created_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_event" ON "webhook_deliveries"  ("event_id") `,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_retention" ON "webhook_deliveries"  ("status", "created_at") `,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries"  ("subscription_id", "next_attempt_at") WHERE "status" = 'pending'`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" SET (autovacuum_vacuum_scale_factor = 0.02, autovacuum_analyze_scale_factor = 0.02)`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" RESET (autovacuum_vacuum_scale_factor, autovacuum_analyze_scale_factor)`,
    );
    await queryRunner.query(`DROP INDEX "public"."IDX_webhook_deliveries_due"`);
    await queryRunner.query(
      `DROP INDEX "public"."IDX_webhook_deliveries_retention"`,
    );
    await queryRunner.query(
      `DROP INDEX "public"."IDX_webhook_deliveries_event"`,
    );
    await queryRunner.query(`DROP INDEX "public"."IDX_events_created_at"`);
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "paused_until"`,
    );
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "consecutive_failures"`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries" USING btree ("subscription_id", "status", "next_attempt_at") `,
    );
  }
}
