import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Expand: a tag of 256 characters or more is found whole through an index of the tag and the
 * id, rather than among every plant whose tag shares its first 256 characters
 * (src/modules/plants/plants.repository.ts). Partial: only such tags are in it. SQLite's btree takes a
 * key of any length, so the tag itself is the key. The previous release never reads it and
 * runs beside it unchanged (docs/decisions.md, "Two releases on one schema").
 */
export class LongTagIndex1795890000000 implements MigrationInterface {
  name = 'LongTagIndex1795890000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE INDEX "IDX_plants_long_tag_id" ON "plants" ("tag", "id") WHERE length("tag") >= 256`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_plants_long_tag_id"`);
  }
}
