import { MigrationInterface, QueryRunner } from 'typeorm';

export class PostgresDeliveryClaims1795661000000 implements MigrationInterface {
  name = 'PostgresDeliveryClaims1795661000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" ADD COLUMN "claimed_until" timestamptz`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_deliveries" DROP COLUMN "claimed_until"`,
    );
  }
}
