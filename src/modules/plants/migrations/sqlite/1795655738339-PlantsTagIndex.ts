import { MigrationInterface, QueryRunner } from 'typeorm';

// Written by hand: TypeORM 1.1's SQLite schema diff proposes rebuilding every table here.
export class PlantsTagIndex1795655738339 implements MigrationInterface {
  name = 'PlantsTagIndex1795655738339';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "IDX_plants_tag_id" ON "plants" ("tag", "id")`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_plants_tag_id"`);
  }
}
