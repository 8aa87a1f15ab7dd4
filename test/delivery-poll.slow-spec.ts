import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { WebhookDelivery } from '../src/modules/webhooks/webhook-delivery.entity';
import { dueDeliveriesOf } from '../src/modules/webhooks/sql-delivery-store';
import { migrationClasses } from './helpers/migrations';
import { createTestDatabase, describeWithPostgres } from './helpers/postgres';

/**
 * The dispatcher's poll costs the same with a million delivered rows as with a thousand: it
 * reads the partial index of pending rows, which a delivered row leaves, and the table is
 * vacuumed after 2 % of it changed rather than PostgreSQL's 20 %. Counted in buffers of the
 * plan that PostgreSQL runs (EXPLAIN ANALYZE), not in milliseconds.
 *
 * No service runs on the database: only this test's sessions (and autovacuum) touch the table,
 * so what VACUUM leaves is what it could reach. A service's loops read the table as they
 * please, and a page one of them holds when VACUUM comes is left to the next VACUUM.
 */

const SUBSCRIPTION = '00000000-0000-4000-8000-000000000001';

interface PlanNode {
  'Index Name'?: string;
  'Actual Rows': number;
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
  Plans?: PlanNode[];
}

function indexesOf(node: PlanNode): string[] {
  return [
    ...(node['Index Name'] ? [node['Index Name']] : []),
    ...(node.Plans ?? []).flatMap(indexesOf),
  ];
}

describeWithPostgres("the dispatcher's poll as deliveries pile up", () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let dataSource: DataSource;
  let client: Client;
  let made = 0;

  beforeAll(async () => {
    database = await createTestDatabase();
    // the service's schema, as its migrations make it, and the entity the poll is built from
    dataSource = new DataSource({
      type: 'postgres',
      url: database.url,
      entities: [WebhookDelivery],
      migrations: migrationClasses('postgres'),
      migrationsTransactionMode: 'each',
    });
    await dataSource.initialize();
    await dataSource.runMigrations();
    // the bulk statements, on a session without the service's statement timeout
    client = new Client({ connectionString: database.url });
    await client.connect();
    await client.query(
      `INSERT INTO "webhook_subscriptions" ("id", "url", "secret", "slot")
       VALUES ($1, 'https://receiver.example/hook', 'secret', 1)`,
      [SUBSCRIPTION],
    );
  });

  afterAll(async () => {
    await client?.end();
    await dataSource?.destroy();
    await database?.drop();
  });

  /**
   * `count` more deliveries, the way the dispatcher leaves them: written pending by the
   * outbox's trigger, then delivered. Then what autovacuum does, at once; resolves to the dead
   * rows that VACUUM left (those a snapshot still sees, or on a page another session held).
   */
  async function deliver(count: number): Promise<number> {
    await client.query(
      `INSERT INTO "webhook_deliveries"
         ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
       SELECT 'msg_' || lpad(n::text, 32, '0'), $1, 'evt_' || n, 'pending', 0, now(), now()
       FROM generate_series($2::int, $3::int) AS n`,
      [SUBSCRIPTION, made + 1, made + count],
    );
    made += count;
    await client.query(
      `UPDATE "webhook_deliveries" SET "status" = 'delivered', "attempts" = 1
       WHERE "status" = 'pending' AND "event_id" NOT LIKE 'due_%'`,
    );
    await client.query('VACUUM (ANALYZE) "webhook_deliveries"');
    const { rows } = await client.query<{ dead: string }>(
      `SELECT n_dead_tup AS dead FROM pg_stat_user_tables WHERE relname = 'webhook_deliveries'`,
    );
    return Number(rows[0].dead);
  }

  /** The poll's own statement for the subscription, as PostgreSQL plans and runs it. */
  async function poll(): Promise<{
    rows: number;
    buffers: number;
    indexes: string[];
  }> {
    const [sql, parameters] = dueDeliveriesOf(
      dataSource.getRepository(WebhookDelivery),
      SUBSCRIPTION,
      new Date(),
      new Date(),
      10,
    ).getQueryAndParameters();
    const [{ 'QUERY PLAN': plans }] = await dataSource.query<
      { 'QUERY PLAN': { Plan: PlanNode }[] }[]
    >(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${sql}`, parameters);
    const plan = plans[0].Plan;
    return {
      rows: plan['Actual Rows'],
      buffers: plan['Shared Hit Blocks'] + plan['Shared Read Blocks'],
      indexes: indexesOf(plan),
    };
  }

  it('reads as many buffers at 1,000,000 delivered rows as at 1,000', async () => {
    // two deliveries due, which every poll below finds
    await client.query(
      `INSERT INTO "webhook_deliveries"
         ("id", "subscription_id", "event_id", "status", "attempts", "next_attempt_at", "created_at")
       SELECT 'msg_due_' || n, $1, 'due_' || n, 'pending', 0, now() - interval '1 minute', now()
       FROM generate_series(1, 2) AS n`,
      [SUBSCRIPTION],
    );
    const leftBySmall = await deliver(1_000);
    const small = await poll();
    const leftByLarge = await deliver(999_000);
    const large = await poll();

    // what the poll is measured after: a VACUUM that removed every delivered row's old version
    expect([leftBySmall, leftByLarge]).toEqual([0, 0]);
    expect(small.rows).toBe(2);
    expect(large.rows).toBe(2);
    // an index of pending rows, not a scan of the table. Which one is the planner's call:
    // with two pending rows among a million, the due index and the retention index (status
    // first) cost it the same, and ANALYZE's sample decides; either reads a few pages
    expect(large.indexes).toEqual([
      expect.stringMatching(/^IDX_webhook_deliveries_(due|retention)$/),
    ]);
    // a few pages either way (4 and 6 when written); the dead entries of the delivered rows,
    // left unvacuumed, made the same poll read 20,826
    expect(large.buffers).toBeLessThanOrEqual(small.buffers + 5);
    expect(large.buffers).toBeLessThan(20);
  });

  it('has the deliveries vacuumed and analyzed after 2 % of them changed, not 20 %', async () => {
    const { rows } = await client.query<{ options: string[] }>(
      `SELECT reloptions AS options FROM pg_class WHERE relname = 'webhook_deliveries'`,
    );
    expect(rows[0].options).toEqual(
      expect.arrayContaining([
        'autovacuum_vacuum_scale_factor=0.02',
        'autovacuum_analyze_scale_factor=0.02',
      ]),
    );
  });
});
