import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Expand: the dispatcher's sequencing of the event log (src/modules/webhooks/sql-delivery-store.ts) as
 * one function, so that it costs one round trip rather than five (a read, then a transaction
 * of three statements). It does what those statements did, in the same order: idle, one read
 * and no lock; else the log's head row locked, then the events committed without a place given
 * theirs in the order they were written, each statement seeing what committed before it (a
 * VOLATILE function's statements take a snapshot each at READ COMMITTED). The previous release
 * never calls it and runs its own statements beside it: both take the head row's lock.
 */
export class EventSequencing1795910000000 implements MigrationInterface {
  name = 'EventSequencing1795910000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE OR REPLACE FUNCTION events_sequence(batch integer) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
       DECLARE
         head bigint;
         placed bigint;
       BEGIN
         IF NOT EXISTS (SELECT 1 FROM "events" WHERE "seq" IS NULL) THEN
           SELECT "last_seq" INTO head FROM "event_log" WHERE "id" = 1;
           RETURN head;
         END IF;
         SELECT "last_seq" INTO head FROM "event_log" WHERE "id" = 1 FOR UPDATE;
         UPDATE "events" SET "seq" = "numbered"."seq" FROM (
           SELECT "id", head + row_number() OVER (ORDER BY "created_at", "id") AS "seq"
           FROM "events" WHERE "seq" IS NULL ORDER BY "created_at", "id" LIMIT batch
         ) AS "numbered" WHERE "events"."id" = "numbered"."id";
         GET DIAGNOSTICS placed = ROW_COUNT;
         UPDATE "event_log" SET "last_seq" = head + placed WHERE "id" = 1;
         RETURN head + placed;
       END $$`,
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP FUNCTION IF EXISTS events_sequence(integer)`);
  }
}
