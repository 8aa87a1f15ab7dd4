import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Idempotency-Key (docs/decisions.md, "Idempotency keys"): per caller and key, the lease of the
 * request that runs with it, then its answer, until it expires.
 */
export class IdempotencyKeys1795870000000 implements MigrationInterface {
  name = 'IdempotencyKeys1795870000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "idempotency_keys" ("caller" character varying(80) NOT NULL, "idempotency_key" character varying(255) NOT NULL, "fingerprint" character varying(43) NOT NULL, "lease_id" character varying(36), "lease_expires_at" TIMESTAMP WITH TIME ZONE, "status" integer, "headers" text, "body" text, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL, "expires_at" TIMESTAMP WITH TIME ZONE NOT NULL, CONSTRAINT "PK_9148296773253b771121d6137a9" PRIMARY KEY ("caller", "idempotency_key"))`,
    );
    await queryRunner.query(
      `CREATE INDEX "IDX_idempotency_keys_expires_at" ON "idempotency_keys"  ("expires_at") `,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `DROP INDEX "public"."IDX_idempotency_keys_expires_at"`,
    );
    await queryRunner.query(`DROP TABLE "idempotency_keys"`);
  }
}
