import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Expand: the moves of the store to another database (src/platform/database/store-move.entity.ts),
 * which fence every instance of this release. A new table the previous release never reads
 * (docs/decisions.md, "Two releases on one schema"); a move fences it with triggers all the
 * same (docs/decisions.md, "Backups and moves").
 */
export class StoreMoves1795950000000 implements MigrationInterface {
  name = 'StoreMoves1795950000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "store_moves" ("id" varchar(36) PRIMARY KEY NOT NULL, "target" text NOT NULL, "started_at" datetime NOT NULL, "fenced_at" datetime, "ended_at" datetime, "outcome" varchar(16))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "store_moves"`);
  }
}
