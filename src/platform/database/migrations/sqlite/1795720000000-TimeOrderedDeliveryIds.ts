import { MigrationInterface, QueryRunner } from 'typeorm';

const WANTS_EVENT = `"removed_at" IS NULL AND ("event_types" IS NULL OR instr(',' || "event_types" || ',', ',' || NEW."type" || ',') > 0)`;

/** The fan-out trigger, with `id` as the expression of a delivery's id. */
const fanOut = (id: string) =>
  `CREATE TRIGGER "events_enqueue_webhook_deliveries" AFTER INSERT ON "events" FOR EACH ROW
       BEGIN
         INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
         SELECT ${id}, "id", NEW."id", 'pending', 0, NEW."created_at", NEW."created_at"
         FROM "webhook_subscriptions" WHERE ${WANTS_EVENT};
         DELETE FROM "events" WHERE "id" = NEW."id" AND changes() = 0;
       END`;

/**
 * A delivery's id (its `webhook-id`, still `msg_` and 32 hex digits) starts with its event's
 * time in milliseconds (12 digits) and ends with 80 random bits: new rows land at the end of
 * the primary key instead of one random page each, so an event fanned out to 100
 * subscriptions writes a few pages of it, not a hundred (bench/README.md, "Issue 23").
 */
export class TimeOrderedDeliveryIds1795720000000 implements MigrationInterface {
  name = 'TimeOrderedDeliveryIds1795720000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "events_enqueue_webhook_deliveries"`);
    await queryRunner.query(
      fanOut(
        `'msg_' || printf('%012x', CAST(round((julianday(NEW."created_at") - 2440587.5) * 86400000) AS INTEGER)) || lower(hex(randomblob(10)))`,
      ),
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "events_enqueue_webhook_deliveries"`);
    await queryRunner.query(fanOut(`'msg_' || lower(hex(randomblob(16)))`));
  }
}
