import { MigrationInterface, QueryRunner } from 'typeorm';

const DELIVERY_ID = `'msg_' || printf('%012x', CAST(round((julianday(NEW."created_at") - 2440587.5) * 86400000) AS INTEGER)) || lower(hex(randomblob(10)))`;
const WANTS_EVENT = `"removed_at" IS NULL AND ("event_types" IS NULL OR instr(',' || "event_types" || ',', ',' || NEW."type" || ',') > 0)`;

/** The fan-out trigger; with `owed`, it leaves out the subscriptions owed their events. */
const fanOut = (owed: boolean) =>
  `CREATE TRIGGER "events_enqueue_webhook_deliveries" AFTER INSERT ON "events" FOR EACH ROW
       BEGIN
         INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
         SELECT ${DELIVERY_ID}, "id", NEW."id", 'pending', 0, NEW."created_at", NEW."created_at"
         FROM "webhook_subscriptions" WHERE ${WANTS_EVENT}${owed ? ` AND "owed_since" IS NULL` : ''};
         DELETE FROM "events" WHERE "id" = NEW."id" AND changes() = 0${
           owed
             ? ` AND NOT EXISTS (SELECT 1 FROM "webhook_subscriptions" WHERE ${WANTS_EVENT} AND "owed_since" IS NOT NULL)`
             : ''
         };
       END`;

/**
 * A paused subscription is owed its events instead of getting a delivery row for each: from
 * `owed_since` on, the fan-out trigger leaves it out, and the dispatcher makes its deliveries
 * once its receiver answers again (docs/decisions.md, "Webhooks"). An event is kept while an
 * owed subscription wants it.
 */
export class OwedEvents1795730000000 implements MigrationInterface {
  name = 'OwedEvents1795730000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" ADD COLUMN "owed_since" datetime`,
    );
    await queryRunner.query(`DROP TRIGGER "events_enqueue_webhook_deliveries"`);
    await queryRunner.query(fanOut(true));
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "events_enqueue_webhook_deliveries"`);
    await queryRunner.query(fanOut(false));
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "owed_since"`,
    );
  }
}
