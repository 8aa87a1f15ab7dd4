import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotency-Key (docs/decisions.md, "Idempotency keys"): per caller and key, the lease of the
 * request that runs with it, then its answer, until it expires.
 */
export class IdempotencyKeys1795870000000 implements MigrationInterface {
  name = 'IdempotencyKeys1795870000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "idempotency_keys" ("caller" varchar(80) NOT NULL, "idempotency_key" varchar(255) NOT NULL, "fingerprint" varchar(43) NOT NULL, "lease_id" varchar(36), "lease_expires_at" datetime, "status" integer, "headers" text, "body" text, "created_at" datetime NOT NULL, "expires_at" datetime NOT NULL, PRIMARY KEY ("caller", "idempotency_key"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_idempotency_keys_expires_at" ON "idempotency_keys" ("expires_at") `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "IDX_idempotency_keys_expires_at"`);
    await queryRunner.query(`DROP TABLE "idempotency_keys"`);
  }
}
