import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Expand: the events a handler gave up on after its attempts (src/platform/events/skipped-event.entity.ts),
 * kept for an operator's retry. A new table the previous release never reads: it goes on retrying
 * a failing event as before while both run (docs/decisions.md, "Two releases on one schema").
 */
export class SkippedEvents1795940000000 implements MigrationInterface {
  name = 'SkippedEvents1795940000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "event_handler_skips" ("handler" varchar(64) NOT NULL, "seq" bigint NOT NULL, "event_id" varchar(36) NOT NULL, "type" varchar(64) NOT NULL, "payload" text NOT NULL, "created_at" datetime NOT NULL, "attempts" integer NOT NULL, "last_error" text NOT NULL, "skipped_at" datetime NOT NULL, "retry_requested_at" datetime, PRIMARY KEY ("handler", "seq"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "event_handler_skips"`);
  }
}
