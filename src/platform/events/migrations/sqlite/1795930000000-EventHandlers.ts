import { MigrationInterface, QueryRunner } from 'typeorm';

const SUBSCRIPTIONS = `SELECT "event_types" FROM "webhook_subscriptions" WHERE "removed_at" IS NULL`;

/**
 * Expand: in-process event handlers (src/platform/events/event-handlers.service.ts), each with its cursor and
 * lease, and among the event consumers while an instance has run it within 7 days, so that the
 * events they handle are written. A new table, and a view that keeps its one column: the
 * previous release reads the view as before, and writes events for handlers too while both run
 * (docs/decisions.md, "Two releases on one schema"). The triggers name the view, and find the
 * new one when they next run.
 */
export class EventHandlers1795930000000 implements MigrationInterface {
  name = 'EventHandlers1795930000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "event_handlers" ("name" varchar(64) PRIMARY KEY NOT NULL, "event_types" text NOT NULL, "cursor" bigint NOT NULL DEFAULT (0), "leased_by" varchar(80), "leased_until" datetime, "failures" integer NOT NULL DEFAULT (0), "retry_at" datetime, "last_error" text, "seen_at" datetime NOT NULL)`,
    );
    await queryRunner.query(`DROP VIEW "event_consumers"`);
    await queryRunner.query(
      `CREATE VIEW "event_consumers" AS ${SUBSCRIPTIONS} UNION ALL SELECT "event_types" FROM "event_handlers" WHERE "seen_at" > strftime('%Y-%m-%d %H:%M:%f', 'now', '-7 days')`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP VIEW "event_consumers"`);
    await queryRunner.query(
      `CREATE VIEW "event_consumers" AS ${SUBSCRIPTIONS}`,
    );
    await queryRunner.query(`DROP TABLE "event_handlers"`);
  }
}
