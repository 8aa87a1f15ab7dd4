import { MigrationInterface, QueryRunner } from 'typeorm';

const DELIVERY_ID = `'msg_' || lpad(to_hex(floor(extract(epoch FROM NEW."created_at") * 1000)::bigint), 12, '0') || substr(md5(gen_random_uuid()::text), 1, 20)`;
const WANTS_EVENT = `"removed_at" IS NULL AND ("event_types" IS NULL OR position(',' || NEW."type" || ',' in ',' || "event_types" || ',') > 0)`;

/** The fan-out function; with `owed`, it leaves out the subscriptions owed their events. */
const fanOut = (owed: boolean) =>
  `CREATE OR REPLACE FUNCTION "events_enqueue_webhook_deliveries"() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
         SELECT ${DELIVERY_ID}, "id", NEW."id", 'pending', 0, NEW."created_at", NEW."created_at"
         FROM "webhook_subscriptions"
         WHERE ${WANTS_EVENT}${owed ? ` AND "owed_since" IS NULL` : ''};
         IF NOT FOUND${
           owed
             ? ` AND NOT EXISTS (SELECT 1 FROM "webhook_subscriptions" WHERE ${WANTS_EVENT} AND "owed_since" IS NOT NULL)`
             : ''
         } THEN
           DELETE FROM "events" WHERE "id" = NEW."id";
         END IF;
         RETURN NULL;
       END $$`;

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
      `ALTER TABLE "webhook_subscriptions" ADD "owed_since" TIMESTAMP WITH TIME ZONE`,
    );
    await queryRunner.query(fanOut(true));
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(fanOut(false));
    await queryRunner.query(
      `ALTER TABLE "webhook_subscriptions" DROP COLUMN "owed_since"`,
    );
  }
}
