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
      `CREATE TABLE "scheduled_jobs" ("name" varchar(64) PRIMARY KEY NOT NULL, "done_tick" datetime, "leased_by" varchar(80), "leased_until" datetime, "last_ended_at" datetime, "last_outcome" varchar(16))`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "scheduled_jobs"`);
  }
}
