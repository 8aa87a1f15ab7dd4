import type { QueryRunner } from 'typeorm';

/** A change to a table that publishes an event its module declares. */
export interface EventTrigger {
  /** The event type, such as `plant.added`. */
  type: string;
  table: string;
  /** INSERT and UPDATE publish the row as it is now, DELETE the row as it was. */
  on: 'INSERT' | 'UPDATE' | 'DELETE';
  /** The payload's fields in order, each a JSON key and the column it is read from. */
  fields: Record<string, string>;
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
const literal = (text: string) => `'${text.replaceAll("'", "''")}'`;

/** `plants_publish_plant_added`: what a migration drops, and a test looks for. */
export function triggerName({
  table,
  type,
}: Pick<EventTrigger, 'table' | 'type'>): string {
  return `${table}_publish_${type.replace(/[^a-z0-9]+/gi, '_')}`;
}

/** `'key', NEW."column", ...` for json_object / json_build_object. */
function payloadArguments({ on, fields }: EventTrigger): string {
  const row = on === 'DELETE' ? 'OLD' : 'NEW';
  return Object.entries(fields)
    .map(([key, column]) => `${literal(key)}, ${row}.${quote(column)}`)
    .join(', ');
}

/**
 * Whether anything consumes an event of this type: the `event_consumers` view lists the
 * event types each consumer wants (`event_types`, comma-separated; NULL for every type). The
 * EventOutbox migration defines it over the webhook subscriptions; a new kind of consumer
 * adds its rows to the view.
 */
export function isConsumed(type: string, postgres: boolean): string {
  const wanted = postgres
    ? `position(',' || ${type} || ',' in ',' || "event_types" || ',') > 0`
    : `instr(',' || "event_types" || ',', ',' || ${type} || ',') > 0`;
  return `EXISTS (SELECT 1 FROM "event_consumers" WHERE "event_types" IS NULL OR ${wanted})`;
}

function isPostgres(queryRunner: QueryRunner): boolean {
  return queryRunner.connection.driver.options.type === 'postgres';
}

/**
 * Makes every such change write its event into the outbox in the same statement, so the event
 * is committed exactly when the change is, on SQLite's one shared connection as on PostgreSQL.
 * The payload is built by the database as a JSON object; integers keep every digit, and the
 * service writes it out again in its own canonical form when it delivers it. While nothing
 * consumes the type, the change writes no event at all: an insert then costs what it did
 * before there were events (bench/README.md).
 */
export async function createEventTrigger(
  queryRunner: QueryRunner,
  trigger: EventTrigger,
): Promise<void> {
  const name = quote(triggerName(trigger));
  const table = quote(trigger.table);
  const type = literal(trigger.type);
  if (isPostgres(queryRunner)) {
    await queryRunner.query(
      `CREATE FUNCTION ${name}() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF ${isConsumed(type, true)} THEN
           INSERT INTO "events" ("id", "type", "payload", "created_at")
           VALUES ('evt_' || replace(gen_random_uuid()::text, '-', ''), ${type}, json_build_object(${payloadArguments(trigger)})::text, now());
         END IF;
         RETURN NULL;
       END $$`,
    );
    await queryRunner.query(
      `CREATE TRIGGER ${name} AFTER ${trigger.on} ON ${table} FOR EACH ROW EXECUTE FUNCTION ${name}()`,
    );
    return;
  }
  await queryRunner.query(
    `CREATE TRIGGER ${name} AFTER ${trigger.on} ON ${table} FOR EACH ROW
     WHEN ${isConsumed(type, false)}
     BEGIN
       INSERT INTO "events" ("id", "type", "payload", "created_at")
       VALUES ('evt_' || lower(hex(randomblob(16))), ${type}, json_object(${payloadArguments(trigger)}), strftime('%Y-%m-%d %H:%M:%f', 'now'));
     END`,
  );
}

export async function dropEventTrigger(
  queryRunner: QueryRunner,
  trigger: EventTrigger,
): Promise<void> {
  const name = quote(triggerName(trigger));
  if (isPostgres(queryRunner)) {
    await queryRunner.query(`DROP TRIGGER ${name} ON ${quote(trigger.table)}`);
    await queryRunner.query(`DROP FUNCTION ${name}()`);
    return;
  }
  await queryRunner.query(`DROP TRIGGER ${name}`);
}
