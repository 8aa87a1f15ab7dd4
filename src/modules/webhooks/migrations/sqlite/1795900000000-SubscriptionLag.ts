import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Expand: since when a subscription has been lagging, so that of the instances watching it
 * one logs that it fell behind and one that it caught up (src/modules/webhooks/webhook-lag.ts).
 * Nullable, and read by no code before this: the previous release runs on it unchanged
 * (docs/decisions.md, "Two releases on one schema"). Added in place, where TypeORM would rebuild
 * the table: SQLite adds a nullable column without touching a row.
 */
export class SubscriptionLag1795900000000 implements MigrationInterface {
  name = 'SubscriptionLag1795900000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD COLUMN "lagging_since" datetime`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "lagging_since"`,
    );
  }
}
