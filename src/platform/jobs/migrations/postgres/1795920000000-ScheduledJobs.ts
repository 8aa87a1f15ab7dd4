import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Expand: periodic jobs' places in their schedules and their leases (src/platform/jobs). A new table,
 * which the previous release never reads: it runs beside this one unchanged, its own timers
 * doing the same upkeep, which is safe to do twice (docs/decisions.md, "Two releases on one
 * schema").
 */
export class ScheduledJobs1795920000000 implements MigrationInterface {
  name = 'ScheduledJobs1795920000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "scheduled_jobs" ("name" character varying(64) NOT NULL, "done_tick" TIMESTAMP WITH TIME ZONE, "leased_by" character varying(80), "leased_until" TIMESTAMP WITH TIME ZONE, "last_ended_at" TIMESTAMP WITH TIME ZONE, "last_outcome" character varying(16), CONSTRAINT "PK_5c795bbd339d082a44c10f1bb4c" PRIMARY KEY ("name"))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "scheduled_jobs"`);
  }
}
