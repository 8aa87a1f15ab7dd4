import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { DataSource, type DataSourceOptions } from 'typeorm';
import { readDatabaseConfig } from '../src/platform/config/database.config';
import { createDataSourceOptions } from '../src/platform/database/data-source-options';
import { PortableDataSource } from '../src/platform/database/portable-data-source';
import { triggerName } from '../src/platform/events/event-triggers';
import { PLANT_EVENTS } from '../src/modules/plants/plant.events';
import { migrationClasses } from './helpers/migrations';
import { MAX_ACTIVE_SUBSCRIPTIONS } from '../src/modules/webhooks/webhook-subscription.entity';
import { createTestDatabase, describeWithPostgres } from './helpers/postgres';
import { ROOT } from './helpers/service-process';
import { makeTempFolder, startTestApp } from './helpers/test-app';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver';

/** Applies `migrations` (all by default) to the database at `url`, as the service would. */
async function migrate(
  url: string,
  migrations?: DataSourceOptions['migrations'],
): Promise<DataSource> {
  const options = createDataSourceOptions(
    readDatabaseConfig({ DATABASE_URL: url }),
  );
  return new PortableDataSource({
    ...options,
    ...(migrations ? { migrations } : {}),
    migrationsRun: true,
  }).initialize();
}

/** `npm run <script> -- <args>` of the TypeORM CLI (ormconfig.ts) on the database at `url`. */
function typeormCli(url: string, script: string, args: string[] = []) {
  const result = spawnSync('npm', ['run', '--silent', script, '--', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: url },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, output: result.stdout + result.stderr };
}

/**
 * `npm run migration:generate -- --check`: exits 0 when the entities and the migrated schema
 * agree, 1 when TypeORM would write a migration.
 */
function migrationCheck(url: string, folder: string) {
  return typeormCli(url, 'migration:generate', [
    '--check',
    join(folder, 'Drift'),
  ]);
}

describe('the schema: entities, migrations and the TypeORM CLI agree', () => {
  let folder: ReturnType<typeof makeTempFolder>;

  beforeAll(() => {
    folder = makeTempFolder();
  });

  afterAll(() => folder.remove());

  it('gives the TypeORM CLI (ormconfig.ts) exactly the entities and migrations the service has', async () => {
    const saved = process.env.DATABASE_URL;
    process.env.DATABASE_URL = 'sqlite::memory:';
    const cli = jest.requireActual<{ default: DataSource }>(
      '../ormconfig',
    ).default;
    process.env.DATABASE_URL = saved;
    await cli.initialize();
    const testApp = await startTestApp();
    try {
      const service = testApp.app.get(DataSource);
      const tables = (dataSource: DataSource) =>
        dataSource.entityMetadatas.map(({ tableName }) => tableName).sort();
      const migrations = (dataSource: DataSource) =>
        dataSource.migrations.map(({ name }) => name);
      expect(tables(cli)).toEqual(tables(service));
      expect(tables(cli)).toContain('plants');
      expect(migrations(cli)).toEqual(migrations(service));
      // TypeORM applies them in timestamp order, whatever order its glob finds them in (a
      // module's second migration is found beside its first, before a later module's)
      const timestamp = (name = '') => Number(name.slice(-13));
      expect(
        migrations(cli).sort((a, b) => timestamp(a) - timestamp(b)),
      ).toEqual(migrationClasses('sqlite').map(({ name }) => name));
    } finally {
      await testApp.close();
      await cli.destroy();
    }
  });

  it('on SQLite: migration:generate finds nothing to change, and finds a change once the schema drifts', async () => {
    const url = `sqlite:${join(folder.path, 'check.sqlite')}`;
    await (await migrate(url)).destroy();
    const clean = migrationCheck(url, folder.path);
    expect(clean.output).toContain('No changes in database schema were found');
    expect(clean.status).toBe(0);

    const drifted = await migrate(url);
    await drifted.query('DROP INDEX "UQ_webhook_subscriptions_active_slot"');
    await drifted.destroy();
    const check = migrationCheck(url, folder.path);
    expect(check.output).toContain('UQ_webhook_subscriptions_active_slot');
    expect(check.status).toBe(1);
    expect(
      readdirSync(folder.path).some((name) => name.includes('Drift')),
    ).toBe(false);
  });

  it('on SQLite: publishes every event of the catalogue from a trigger', async () => {
    const dataSource = await migrate('sqlite::memory:');
    const triggers = await dataSource.query<{ name: string }[]>(
      `SELECT name FROM sqlite_master WHERE type = 'trigger'`,
    );
    await dataSource.destroy();
    expect(unpublished(triggers.map(({ name }) => name))).toEqual([]);
    // an event takes its place in the log as it is written (a migration that rebuilds
    // "events" must make this trigger again)
    expect(triggers.map(({ name }) => name)).toContain(
      'events_take_their_place',
    );
  });

  it('on SQLite: rebuilds a table that triggers and views name, the way TypeORM changes a table', async () => {
    const url = `sqlite:${join(folder.path, 'rebuild.sqlite')}`;
    const dataSource = await migrate(url);
    try {
      await dataSource.query(
        `CREATE TABLE "temporary_webhook_subscriptions" AS SELECT * FROM "webhook_subscriptions"`,
      );
      await dataSource.query(`DROP TABLE "webhook_subscriptions"`);
      await dataSource.query(
        `ALTER TABLE "temporary_webhook_subscriptions" RENAME TO "webhook_subscriptions"`,
      );
      await dataSource.query(
        `INSERT INTO "webhook_subscriptions" ("id", "url", "secret") VALUES ('s', 'https://example.com', 'whsec_x')`,
      );
      await dataSource.query(
        `INSERT INTO "plants" ("id", "name") VALUES (1, 'Rebuilt Rose')`,
      );
      // the plants' trigger asks the view over the rebuilt table, and the event takes its place
      expect(
        await dataSource.query(`SELECT "type", "seq" FROM "events"`),
      ).toEqual([{ type: 'plant.added', seq: 1n }]);
    } finally {
      await dataSource.destroy();
    }
  });

  describeWithPostgres('on PostgreSQL', () => {
    it('migration:run, as docs/conventions.md has a module author run it, migrates an empty database', async () => {
      // a migration that runs outside a transaction (an index built CONCURRENTLY) made the
      // CLI's default of one transaction for all fail: ForbiddenTransactionModeOverrideError
      const database = await createTestDatabase();
      try {
        const run = typeormCli(database.url, 'migration:run');
        expect(run.output).not.toContain('Error');
        expect(run.status).toBe(0);
        const check = migrationCheck(database.url, folder.path);
        expect(check.output).toContain(
          'No changes in database schema were found',
        );
      } finally {
        await database.drop();
      }
    });

    it('migration:generate finds nothing to change, and every event of the catalogue is published from a trigger', async () => {
      const database = await createTestDatabase();
      try {
        const dataSource = await migrate(database.url);
        const triggers = await dataSource.query<{ tgname: string }[]>(
          'SELECT tgname FROM pg_trigger WHERE NOT tgisinternal',
        );
        await dataSource.destroy();
        expect(unpublished(triggers.map(({ tgname }) => tgname))).toEqual([]);
        const check = migrationCheck(database.url, folder.path);
        expect(check.output).toContain(
          'No changes in database schema were found',
        );
        expect(check.status).toBe(0);
      } finally {
        await database.drop();
      }
    });
  });
});

/** The plants' event types that no trigger among `names` publishes, on any table. */
function unpublished(names: string[]): string[] {
  return PLANT_EVENTS.map(({ type }) => type).filter(
    (type) =>
      !names.some((name) => name.endsWith(triggerName({ table: '', type }))),
  );
}

function migrationsBeforeEventOutbox<T extends { name: string }>(
  migrations: T[],
): T[] {
  return migrations.slice(
    0,
    migrations.findIndex(({ name }) => name.includes('EventOutbox')),
  );
}

/**
 * The EventOutbox migration on a database written by the schema before it: subscriptions
 * keep receiving what they subscribed to, and a pending delivery keeps its webhook-id, its
 * body and its place in the queue.
 */
function upgradeSuite(
  migrationsBefore: DataSourceOptions['migrations'],
  database: () => Promise<{ url: string; drop: () => Promise<void> }>,
) {
  return async () => {
    const { url, drop } = await database();
    const receiver = await WebhookReceiver.start();
    try {
      const old = await migrate(url, migrationsBefore);
      await old.query(
        `INSERT INTO webhook_subscriptions (id, url, secret) VALUES ('00000000-0000-4000-8000-000000000001', '${receiver.url}', 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTIzNDU=')`,
      );
      // the old trigger writes a delivery per plant, copying the plant into it
      await old.query(
        `INSERT INTO plants (id, name, tag) VALUES (9223372036854775807, 'Old Oak', NULL)`,
      );
      await old.query(
        `INSERT INTO plants (id, name, tag) VALUES (5, 'Done Dahlia', 'flower')`,
      );
      await old.query(
        `UPDATE webhook_deliveries SET status = 'delivered', attempts = 1, last_status_code = 200 WHERE plant_id = 5`,
      );
      const [pending] = await old.query<{ id: string }[]>(
        `SELECT id FROM webhook_deliveries WHERE status = 'pending'`,
      );
      await old.destroy();

      const testApp = await startTestApp({
        env: {
          DATABASE_URL: url,
          WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
          WEBHOOKS_POLL_INTERVAL: '50ms',
        },
      });
      try {
        const [webhook] = await receiver.waitFor(1);
        expect(webhook.headers['webhook-id']).toBe(pending.id);
        expect(webhook.headers['webhook-event-type']).toBe('plant.added');
        expect(webhook.body).toBe(
          '{"id":9223372036854775807,"name":"Old Oak"}',
        );

        const token = await testApp.issueToken();
        const auth = { Authorization: `Bearer ${token}` };
        const subscriptions = await testApp
          .http()
          .get('/webhooks/subscriptions')
          .set(auth)
          .expect(200);
        expect(subscriptions.body).toEqual([
          expect.objectContaining({
            id: '00000000-0000-4000-8000-000000000001',
            events: ['plant.added'],
          }),
        ]);
        const history = async () =>
          (
            (
              await testApp
                .http()
                .get(
                  '/webhooks/subscriptions/00000000-0000-4000-8000-000000000001/deliveries',
                )
                .set(auth)
                .expect(200)
            ).body as { id: string; eventType: string; status: string }[]
          ).map(({ id, eventType, status }) => `${id} ${eventType} ${status}`);
        const delivered = await eventually(history, (rows) =>
          rows.every((row) => row.endsWith('plant.added delivered')),
        );
        expect(delivered).toHaveLength(2);
        expect(delivered).toContain(`${pending.id} plant.added delivered`);

        // subscribed to plant.added only: a deletion is not sent to it
        await testApp.http().delete('/plants/5').set(auth).expect(204);
        await testApp
          .http()
          .post('/plants')
          .set(auth)
          .send({ id: 6, name: 'New Nettle' })
          .expect(200);
        await receiver.waitFor(2);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(receiver.received.map(({ body }) => body)).toEqual([
          '{"id":9223372036854775807,"name":"Old Oak"}',
          '{"id":6,"name":"New Nettle"}',
        ]);
      } finally {
        await testApp.close();
      }
    } finally {
      await receiver.close();
      await drop();
    }
  };
}

describe('upgrading a database written by the previous schema', () => {
  it(
    'on SQLite keeps subscriptions, pending deliveries and their history',
    upgradeSuite(
      migrationsBeforeEventOutbox(migrationClasses('sqlite')),
      () => {
        const folder = makeTempFolder();
        const file = join(folder.path, 'old.sqlite');
        return Promise.resolve({
          url: `sqlite:${file}`,
          drop: () => Promise.resolve(folder.remove()),
        });
      },
    ),
  );

  describeWithPostgres('on PostgreSQL', () => {
    it(
      'keeps subscriptions, pending deliveries and their history',
      upgradeSuite(
        migrationsBeforeEventOutbox(migrationClasses('postgres')),
        createTestDatabase,
      ),
    );
  });
});

/**
 * The SubscriptionSlots migration on a database where concurrent creates had passed the cap:
 * the oldest 100 active subscriptions keep it, in order, and the rest are removed as DELETE
 * removes one (secret erased, pending deliveries cancelled).
 */
function slotsUpgrade(
  engine: 'sqlite' | 'postgres',
  database: () => Promise<{ url: string; drop: () => Promise<void> }>,
) {
  return async () => {
    const all = migrationClasses(engine);
    const before = all.slice(
      0,
      all.findIndex(({ name }) => name.includes('SubscriptionSlots')),
    );
    const { url, drop } = await database();
    try {
      const old = await migrate(url, before);
      for (let i = 1; i <= MAX_ACTIVE_SUBSCRIPTIONS + 3; i += 1) {
        const id = `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`;
        const createdAt = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString();
        await old.query(
          `INSERT INTO webhook_subscriptions (id, url, secret, created_at) VALUES ('${id}', 'https://example.com/${i}', 'whsec_secret', '${createdAt.replace('T', ' ').replace('Z', '')}')`,
        );
      }
      const last = `00000000-0000-4000-8000-${String(MAX_ACTIVE_SUBSCRIPTIONS + 3).padStart(12, '0')}`;
      await old.query(
        `INSERT INTO webhook_deliveries (id, subscription_id, event_id, status, attempts, next_attempt_at, created_at) VALUES ('msg_past_the_cap', '${last}', 'evt_x', 'pending', 0, '2026-01-01 00:00:00', '2026-01-01 00:00:00')`,
      );
      await old.destroy();

      const migrated = await migrate(url);
      try {
        const rows = await migrated.query<
          {
            id: string;
            slot: number | null;
            secret: string;
            removed: boolean;
          }[]
        >(
          `SELECT id, slot, secret, removed_at IS NOT NULL AS removed FROM webhook_subscriptions ORDER BY created_at`,
        );
        expect(
          rows
            .slice(0, MAX_ACTIVE_SUBSCRIPTIONS)
            .map(({ slot }) => Number(slot)),
        ).toEqual(
          Array.from({ length: MAX_ACTIVE_SUBSCRIPTIONS }, (_, i) => i + 1),
        );
        expect(
          rows
            .slice(MAX_ACTIVE_SUBSCRIPTIONS)
            .map(({ slot, secret, removed }) => [
              slot,
              secret,
              Boolean(removed),
            ]),
        ).toEqual(Array(3).fill([null, '', true]));
        const [delivery] = await migrated.query<{ status: string }[]>(
          `SELECT status FROM webhook_deliveries WHERE id = 'msg_past_the_cap'`,
        );
        expect(delivery.status).toBe('cancelled');
      } finally {
        await migrated.destroy();
      }
    } finally {
      await drop();
    }
  };
}

describe('upgrading subscriptions that passed the cap', () => {
  it(
    'on SQLite keeps the oldest 100, each in its slot, and removes the rest',
    slotsUpgrade('sqlite', () => {
      const folder = makeTempFolder();
      return Promise.resolve({
        url: `sqlite:${join(folder.path, 'old.sqlite')}`,
        drop: () => Promise.resolve(folder.remove()),
      });
    }),
  );

  describeWithPostgres('on PostgreSQL', () => {
    it(
      'keeps the oldest 100, each in its slot, and removes the rest',
      slotsUpgrade('postgres', createTestDatabase),
    );
  });
});

/**
 * The DeliveryCursors migration on a database written by the owed-events design: a pending
 * delivery keeps its webhook-id, the events owed to a paused subscription become its pending
 * deliveries (each once, its probes' events not twice), every event gets its place in the order
 * written, and every cursor starts at the head; then each receiver gets all it was due, once.
 */
function cursorsUpgrade(
  engine: 'sqlite' | 'postgres',
  database: () => Promise<{ url: string; drop: () => Promise<void> }>,
) {
  return async () => {
    const all = migrationClasses(engine);
    const before = all.slice(
      0,
      all.findIndex(({ name }) => name.includes('DeliveryCursors')),
    );
    const { url, drop } = await database();
    const live = await WebhookReceiver.start();
    const paused = await WebhookReceiver.start();
    // to the millisecond: the owed events are those written after it
    const now =
      engine === 'postgres' ? 'now()' : "strftime('%Y-%m-%d %H:%M:%f', 'now')";
    try {
      const old = await migrate(url, before);
      await old.query(
        `INSERT INTO webhook_subscriptions (id, url, secret, slot) VALUES ('00000000-0000-4000-8000-00000000000a', '${live.url}', 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTIzNDU=', 1)`,
      );
      // the old fan-out trigger writes a delivery per plant for the live one
      await old.query(`INSERT INTO plants (id, name) VALUES (1, 'Before')`);
      const [pending] = await old.query<{ id: string }[]>(
        `SELECT id FROM webhook_deliveries WHERE status = 'pending'`,
      );
      // the paused one, owed its events from now on (a later millisecond than the first
      // event): no row each, the events kept for it
      await new Promise((resolve) => setTimeout(resolve, 10));
      await old.query(
        `INSERT INTO webhook_subscriptions (id, url, secret, slot, consecutive_failures, paused_until, owed_since) VALUES ('00000000-0000-4000-8000-00000000000b', '${paused.url}', 'whsec_c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTIzNDU=', 2, 5, ${now}, ${now})`,
      );
      for (let plant = 2; plant <= 4; plant += 1) {
        await old.query(
          `INSERT INTO plants (id, name) VALUES (${plant}, 'Owed ${plant}')`,
        );
      }
      const [{ owedRows }] = await old.query<{ owedRows: unknown }[]>(
        `SELECT count(*) AS "owedRows" FROM webhook_deliveries WHERE subscription_id = '00000000-0000-4000-8000-00000000000b'`,
      );
      expect(Number(owedRows)).toBe(0);
      await old.destroy();

      const testApp = await startTestApp({
        env: {
          DATABASE_URL: url,
          WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
          WEBHOOKS_POLL_INTERVAL: '50ms',
        },
      });
      try {
        // the live one: its pending delivery as it was, then the owed-era events once each
        const fromLive = await live.waitFor(4);
        expect(fromLive[0].headers['webhook-id']).toBe(pending.id);
        expect(fromLive.map(({ body }) => body).sort()).toEqual([
          '{"id":1,"name":"Before"}',
          '{"id":2,"name":"Owed 2"}',
          '{"id":3,"name":"Owed 3"}',
          '{"id":4,"name":"Owed 4"}',
        ]);
        // the paused one: what it was owed, once its pause is over and its probe succeeds
        const fromPaused = await paused.waitFor(3);
        expect(fromPaused.map(({ body }) => body).sort()).toEqual([
          '{"id":2,"name":"Owed 2"}',
          '{"id":3,"name":"Owed 3"}',
          '{"id":4,"name":"Owed 4"}',
        ]);
        const placed = await testApp.query<{ seq: bigint }>(
          'SELECT seq FROM events ORDER BY seq',
        );
        expect(placed.map(({ seq }) => Number(seq))).toEqual([1, 2, 3, 4]);
        const cursors = await testApp.query<{ cursor: bigint }>(
          'SELECT cursor FROM webhook_subscriptions',
        );
        expect(cursors.map(({ cursor }) => Number(cursor))).toEqual([4, 4]);
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(live.received).toHaveLength(4);
        expect(paused.received).toHaveLength(3);
      } finally {
        await testApp.close();
      }
    } finally {
      await Promise.all([live.close(), paused.close()]);
      await drop();
    }
  };
}

describe('upgrading a database written by the owed-events design', () => {
  it(
    'on SQLite keeps pending deliveries, makes the owed events deliveries and places every event',
    cursorsUpgrade('sqlite', () => {
      const folder = makeTempFolder();
      return Promise.resolve({
        url: `sqlite:${join(folder.path, 'owed.sqlite')}`,
        drop: () => Promise.resolve(folder.remove()),
      });
    }),
  );

  describeWithPostgres('on PostgreSQL', () => {
    it(
      'keeps pending deliveries, makes the owed events deliveries and places every event',
      cursorsUpgrade('postgres', createTestDatabase),
    );
  });
});
