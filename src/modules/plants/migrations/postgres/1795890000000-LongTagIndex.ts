import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Expand: a tag of 256 characters or more is found whole through an index of its SHA-256
 * digest and the id, rather than among every plant whose tag shares its first 256 characters
 * (src/modules/plants/plants.repository.ts). Partial: only such tags are in it. Built CONCURRENTLY,
 * outside a transaction, so that creates go on while it is built; an index a failed attempt
 * left invalid is dropped first. The previous release never reads it and runs beside it
 * unchanged (docs/decisions.md, "Two releases on one schema").
 */
export class LongTagIndex1795890000000 implements MigrationInterface {
  name = 'LongTagIndex1795890000000';
  transaction = false;

  public async up(queryRunner: QueryRunner): Promise<void> {
    // the database's text is the tag's UTF-8 whatever the server's encoding; convert_to is
    // stable only because encodings may change, which a database's never does
    await queryRunner.query(
      `CREATE OR REPLACE FUNCTION plant_tag_digest(tag text) RETURNS bytea ` +
        `LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE ` +
        `AS $$ SELECT sha256(convert_to(tag, 'UTF8')) $$`,
    );
    await queryRunner.query(
      `DROP INDEX CONCURRENTLY IF EXISTS "IDX_plants_long_tag_id"`,
    );
    await queryRunner.query(
      `CREATE INDEX CONCURRENTLY "IDX_plants_long_tag_id" ON "plants" ` +
        `(plant_tag_digest("tag"), "id") WHERE length("tag") >= 256`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX IF EXISTS "IDX_plants_long_tag_id"`);
    await queryRunner.query(`DROP FUNCTION IF EXISTS plant_tag_digest(text)`);
  }
}
