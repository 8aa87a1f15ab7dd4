import { MigrationInterface, QueryRunner } from 'typeorm';

/** The fan-out function, with `id` as the expression of a delivery's id. */
const fanOut = (id: string) =>
  `CREATE OR REPLACE FUNCTION "events_enqueue_webhook_deliveries"() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         INSERT INTO "webhook_deliveries" ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
         SELECT ${id}, "id", NEW."id", 'pending', 0, NEW."created_at", NEW."created_at"
         FROM "webhook_subscriptions"
         WHERE "removed_at" IS NULL AND ("event_types" IS NULL OR position(',' || NEW."type" || ',' in ',' || "event_types" || ',') > 0);
         IF NOT FOUND THEN
           DELETE FROM "events" WHERE "id" = NEW."id";
         END IF;
         RETURN NULL;
       END $$`;

/**
 * A delivery's id (its `webhook-id`, still `msg_` and 32 hex digits) starts with its event's
 * time in milliseconds (12 digits) and ends with 80 random bits: new rows land at the end of
 * the primary key instead of one random page each, so an event fanned out to 100
 * subscriptions writes a few pages of it, not a hundred (bench/README.md, "Issue 23").
 */
export class TimeOrderedDeliveryIds1795720000000 implements MigrationInterface {
  name = 'TimeOrderedDeliveryIds1795720000000';

  public async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      fanOut(
        `'msg_' || lpad(to_hex(floor(extract(epoch FROM NEW."created_at") * 1000)::bigint), 12, '0') || substr(md5(gen_random_uuid()::text), 1, 20)`,
      ),
    );
  }

  public async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      fanOut(`'msg_' || replace(gen_random_uuid()::text, '-', '')`),
    );
  }
}
