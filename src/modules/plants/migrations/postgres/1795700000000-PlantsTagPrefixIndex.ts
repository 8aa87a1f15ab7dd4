import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Plants filtered by tag are paged through an index on the tag's first 256 characters and the
 * id, rather than on the whole tag: PostgreSQL's btree refuses an entry over 2704 bytes, so a
 * long tag made the insert fail. 256 characters are 1 KiB of UTF-8 at most. The same index,
 * and the same query, on both engines (src/modules/plants/plants.repository.ts).
 */
export class PlantsTagPrefixIndex1795700000000 implements MigrationInterface {
  name = 'PlantsTagPrefixIndex1795700000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_plants_tag_id"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_plants_tag_prefix_id" ON "plants" (substr("tag", 1, 256), "id")`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_plants_tag_prefix_id"`);
    await queryRunner.query(
      `CREATE INDEX "IDX_plants_tag_id" ON "plants" ("tag", "id")`,
    );
  }
}
