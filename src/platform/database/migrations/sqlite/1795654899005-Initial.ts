import { MigrationInterface, QueryRunner } from 'typeorm';

export class Initial1795654899005 implements MigrationInterface {
  name = 'Initial1795654899005';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "api_tokens" ("id" varchar PRIMARY KEY NOT NULL, "name" text NOT NULL, "token_hash" varchar(64) NOT NULL, "scopes" text NOT NULL, "created_at" datetime NOT NULL DEFAULT (datetime('now')), "expires_at" datetime, "revoked_at" datetime, "last_used_at" datetime)`,
    );
    await queryRunner.query(
      `CREATE UNIQUE INDEX "IDX_bbd687a104e1921e6702c6e3aa" ON "api_tokens" ("token_hash") `,
    );
    await queryRunner.query(
      `CREATE TABLE "plants" ("id" bigint PRIMARY KEY NOT NULL, "name" text NOT NULL, "tag" text)`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "plants"`);
    await queryRunner.query(`DROP INDEX "IDX_bbd687a104e1921e6702c6e3aa"`);
    await queryRunner.query(`DROP TABLE "api_tokens"`);
  }
}
