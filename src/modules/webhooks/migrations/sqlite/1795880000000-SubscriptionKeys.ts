import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Expand: the caller and Idempotency-Key a subscription was created with, so that removing it
 * erases its secret from that key's stored answer too. Nullable, and read by no code before
 * this: the previous release runs on it unchanged (docs/decisions.md, "Two releases on one
 * schema"). Added in place, where TypeORM would rebuild the table: SQLite adds a nullable
 * column without touching a row.
 */
export class SubscriptionKeys1795880000000 implements MigrationInterface {
  name = 'SubscriptionKeys1795880000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD COLUMN "created_with_key" text`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "created_with_key"`,
    );
  }
}
