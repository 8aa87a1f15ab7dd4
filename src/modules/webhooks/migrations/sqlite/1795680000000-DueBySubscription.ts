import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The dispatcher reads due deliveries subscription by subscription (a slow receiver's backlog
 * must not be scanned past to reach the others'), so the due index leads with the subscription.
 */
export class DueBySubscription1795680000000 implements MigrationInterface {
  name = 'DueBySubscription1795680000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_due"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries" ("subscription_id", "status", "next_attempt_at")`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_webhook_deliveries_due"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_webhook_deliveries_due" ON "webhook_deliveries" ("status", "next_attempt_at")`,
    );
  }
}
