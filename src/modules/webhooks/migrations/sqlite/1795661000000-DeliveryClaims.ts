import { MigrationInterface, QueryRunner } from 'typeorm';

export class DeliveryClaims1795661000000 implements MigrationInterface {
  name = 'DeliveryClaims1795661000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD COLUMN "claimed_until" datetime`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" DROP COLUMN "claimed_until"`,
    );
  }
}
