import { testLimit } from './helpers/pace';
import { join } from 'node:path';
import { Client } from 'pg';
import type { MigrationInterface, QueryRunner } from 'typeorm';
import { MIGRATION_LOCK_TIMEOUT_MS } from '../src/platform/database/locked-migrations';
import { PortableDataSource } from '../src/platform/database/portable-data-source';
import { SCHEMA_MISMATCH_MESSAGE } from '../src/platform/common/errors/error-answers';
import { createTestDatabase } from './helpers/postgres';
import {
  runCliProcess,
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';
import { databaseReader, ENGINE, makeTempFolder } from './helpers/test-app';
import { eventually } from './helpers/webhook-receiver';
import { migrationClasses } from './helpers/migrations';

/**
 * What a rolling update needs of each build (docs/operations.md, "Upgrades"), over HTTP to
 * `node dist/main.js`: its migrations said one line each; a schema a newer release expanded is
 * served; a schema that another release changed past this build's code is said so at boot and
 * in readiness, and requests get 503 rather than 500; statements prepared before a newer
 * release changed a table are prepared again. test/rolling-upgrade.slow-spec.ts runs the
 * previous release itself beside this one.
 */
describe(`upgrades: this build on a schema another release migrated (${ENGINE})`, () => {
  let folder: ReturnType<typeof makeTempFolder>;
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let env: Record<string, string>;
  let token: string;
  let db: ReturnType<typeof databaseReader>;
  const running: ServiceProcess[] = [];

  beforeEach(async () => {
    folder = makeTempFolder();
    database = ENGINE === 'postgres' ? await createTestDatabase() : undefined;
    env = {
      DATABASE_URL:
        database?.url ?? `sqlite:${join(folder.path, 'store.sqlite')}`,
      LOG_LEVEL: 'info',
    };
    db = databaseReader(
      ENGINE,
      database?.url ?? join(folder.path, 'store.sqlite'),
      { writable: true },
    );
  });

  afterEach(async () => {
    for (const service of running.splice(0)) {
      service.child.kill('SIGKILL');
      await service.exited;
    }
    await db.close();
    await database?.drop();
    database = undefined;
    folder.remove();
  });

  async function start(): Promise<ServiceProcess> {
    const service = await startServiceProcess(env);
    running.push(service);
    return service;
  }

  async function createToken(): Promise<void> {
    token = (
      await runCliProcess(
        [
          'tokens',
          'create',
          '--name',
          'upgrades',
          '--scopes',
          'plants:read,plants:write',
        ],
        env,
      )
    ).lastLine;
  }

  const call = (
    service: ServiceProcess,
    path: string,
    init: RequestInit = {},
  ) =>
    fetch(`${service.baseUrl}${path}`, {
      ...init,
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
        ...init.headers,
      },
    });

  const ready = async (service: ServiceProcess) => {
    const response = await fetch(`${service.baseUrl}/health/ready`);
    return { status: response.status, body: await response.text() };
  };

  /** What a newer release's migration leaves in the migrations table. */
  const recordMigration = (name: string) =>
    db.query(`INSERT INTO migrations (timestamp, name) VALUES (?, ?)`, [
      Number(name.slice(-13)),
      name,
    ]);

  it('says each migration it applied in one line: its name, the instance and how long it took', async () => {
    const first = await start();
    // the service's lines reach its output within LOG_FLUSH_INTERVAL_MS, not at once
    const startLine = (service: ServiceProcess) =>
      eventually(
        () => service.lines(),
        (lines) => lines.some((line) => line.msg.startsWith('plant store ')),
        10_000,
      );
    await startLine(first);
    const applied = first
      .lines()
      .filter((line) => line.context === 'Migrations');
    expect(applied.map((line) => line.migration)).toEqual(
      migrationClasses(ENGINE).map((migration) => migration.name),
    );
    for (const line of applied) {
      expect(line).toMatchObject({
        level: 30,
        instance: `${String(line.hostname)}:${first.child.pid}`,
        durationMs: expect.any(Number),
        msg: `migration ${String(line.migration)} applied by ${String(line.hostname)}:${first.child.pid} in ${String(line.durationMs)} ms`,
      });
    }
    first.child.kill('SIGTERM');
    await first.exited;
    // the next start finds nothing to apply, and says nothing of migrations
    const second = await start();
    await startLine(second);
    expect(
      second.lines().filter((line) => line.context === 'Migrations'),
    ).toEqual([]);
  });

  it('serves a schema a newer release expanded, and says at boot that the schema is ahead of it', async () => {
    (await start()).child.kill('SIGTERM');
    await running.pop()!.exited;
    await createToken();
    // what an expand step adds: a table, a nullable column, a NOT NULL column with a default
    await db.query('CREATE TABLE plant_notes (id integer PRIMARY KEY)', []);
    await db.query('ALTER TABLE plants ADD COLUMN care text', []);
    await db.query(
      "ALTER TABLE plants ADD COLUMN light varchar(16) NOT NULL DEFAULT 'bright'",
      [],
    );
    await recordMigration('PlantCare1899999999999');
    const service = await start();
    expect(await ready(service)).toMatchObject({ status: 200 });
    const created = await call(service, '/plants', {
      method: 'POST',
      body: '{"id":1,"name":"Fern"}',
    });
    expect([created.status, await created.text()]).toEqual([
      200,
      '{"id":1,"name":"Fern"}',
    ]);
    expect((await call(service, '/plants/1')).status).toBe(200);
    expect(
      await eventually(
        () => service.lines().find((line) => line.context === 'Schema'),
        (line) => line !== undefined,
        5000,
      ),
    ).toMatchObject({
      level: 40,
      unknownMigrations: ['PlantCare1899999999999'],
      msg: 'the schema is ahead of this build: 1 migration it does not know (PlantCare1899999999999) ran on it; this build fits it and serves',
    });
  });

  it('answers 503, not 500, once another release changed the schema past its code, and readiness says why', async () => {
    const service = await start();
    await createToken();
    await call(service, '/plants', {
      method: 'POST',
      body: '{"id":1,"name":"Fern","tag":"green"}',
    });
    expect(await ready(service)).toMatchObject({ status: 200 });
    // a contract step of a release this build cannot run beside
    await db.query('ALTER TABLE plants RENAME COLUMN tag TO label', []);
    await recordMigration('RenameTag1899999999999');
    const read = await call(service, '/plants/1');
    expect([read.status, await read.json()]).toEqual([
      503,
      { error: 503, message: SCHEMA_MISMATCH_MESSAGE },
    ]);
    // readiness shares one answer a second among its callers: the next one says why
    const readiness = await eventually(
      () => ready(service),
      ({ status }) => status !== 200,
      5000,
    );
    expect(readiness.status).toBe(503);
    expect(JSON.parse(readiness.body)).toEqual({
      error: 503,
      message: expect.stringContaining(
        "this build's code does not fit the database's schema, which another release migrated: column plants.tag does not exist.",
      ),
    });
    // said once, at error level, not once per request
    const said = await eventually(
      () => service.lines().filter((line) => line.context === 'Schema'),
      (lines) => lines.length > 0,
      5000,
    );
    expect(said).toEqual([
      expect.objectContaining({
        level: 50,
        msg: JSON.parse(readiness.body).message,
      }),
    ]);
    expect(
      service.lines().filter((line) => Number(line.level) >= 50),
    ).toHaveLength(1);

    // an instance started afresh on that schema says so at boot, and is never ready
    const fresh = await start();
    expect(await ready(fresh)).toMatchObject({ status: 503 });
    expect(
      await eventually(
        () => fresh.lines().filter((line) => line.context === 'Schema'),
        (lines) => lines.length >= 2,
        5000,
      ),
    ).toEqual([
      expect.objectContaining({
        level: 40,
        msg: 'the schema is ahead of this build: 1 migration it does not know (RenameTag1899999999999) ran on it; this build does not fit it',
      }),
      expect.objectContaining({
        level: 50,
        msg: JSON.parse(readiness.body).message,
      }),
    ]);
  });

  it(
    'is not ready on a schema with a required column its code does not write',
    async () => {
      const service = await start();
      await db.query(
        'ALTER TABLE plants ADD COLUMN owner varchar(40) NOT NULL',
        [],
      );
      // readiness looks again once its last look is 10 s old, or at once after a misfit
      const deadline = Date.now() + 30_000;
      let readiness = await ready(service);
      while (readiness.status === 200 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 500));
        readiness = await ready(service);
      }
      expect(readiness.status).toBe(503);
      expect(readiness.body).toContain(
        'column plants.owner is required (NOT NULL without a default) and this build does not write it',
      );
    },
    testLimit(60_000),
  );

  if (ENGINE === 'postgres') {
    it('prepares again a statement whose result a newer release changed, instead of answering 500', async () => {
      const service = await start();
      await createToken();
      const keyed = () =>
        call(service, '/plants', {
          method: 'POST',
          headers: { 'Idempotency-Key': 'stale-plan' },
          body: '{"id":7,"name":"Fern"}',
        });
      // the first create and its repeat prepare the key's statements on the pool's connections
      expect((await keyed()).status).toBe(200);
      for (let i = 0; i < 5; i += 1) expect((await keyed()).status).toBe(200);
      // a newer release widens a column the key's SELECT returns: each prepared plan is stale
      await db.query(
        'ALTER TABLE idempotency_keys ALTER COLUMN fingerprint TYPE varchar(64)',
        [],
      );
      const repeats = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const response = await keyed();
          return [response.status, await response.text()];
        }),
      );
      expect(repeats).toEqual(Array(10).fill([200, '{"id":7,"name":"Fern"}']));
    });

    it('gives way to live traffic: a migration that would deadlock with a write waits and is run again, the write goes through, those before it stay applied', async () => {
      // the schema this build makes, then a live transaction that holds plants' rows
      (await start()).child.kill('SIGTERM');
      await running.pop()!.exited;
      const live = new Client({ connectionString: env.DATABASE_URL });
      await live.connect();
      const retries: string[] = [];
      const applied: string[] = [];
      class AddsATable implements MigrationInterface {
        name = 'AddsATable1899999999998';
        async up(queryRunner: QueryRunner): Promise<void> {
          await queryRunner.query('CREATE TABLE upgrade_probe (id int)');
        }
        async down(): Promise<void> {}
      }
      class TouchesBothTables implements MigrationInterface {
        name = 'TouchesBothTables1899999999999';
        async up(queryRunner: QueryRunner): Promise<void> {
          await queryRunner.query(
            'ALTER TABLE api_tokens ADD COLUMN note text',
          );
          await queryRunner.query('ALTER TABLE plants ADD COLUMN note text');
        }
        async down(): Promise<void> {}
      }
      const migrating = new PortableDataSource({
        type: 'postgres',
        url: env.DATABASE_URL,
        migrations: [AddsATable, TouchesBothTables],
        logger: 'debug',
        migrationReporter: {
          applied: (name) => applied.push(name),
          retrying: (_attempt, reason) => retries.push(reason),
        },
      });
      await migrating.initialize();
      try {
        await live.query('BEGIN');
        await live.query("INSERT INTO plants (id, name) VALUES (1, 'live')");
        // the migration takes api_tokens, then waits for plants, which the live write holds
        const migration = migrating.runMigrations();
        // seen waiting, not slept for: on a loaded machine the migration can take longer than
        // any fixed pause to reach plants, and the live read would then pass before it
        await eventually(
          () =>
            db.query<{ waiting: bigint }>(
              `SELECT count(*) AS waiting FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock'
                  AND query LIKE 'ALTER TABLE plants%'`,
              [],
            ),
          ([{ waiting }]) => waiting > 0n,
        );
        // the live write then needs api_tokens, which the migration holds: a deadlock, unless
        // the migration gives way first
        const started = Date.now();
        await live.query('SELECT count(*) FROM api_tokens');
        await live.query('COMMIT');
        expect(Date.now() - started).toBeLessThan(
          2 * MIGRATION_LOCK_TIMEOUT_MS + 500,
        );
        await migration;
        // each migration commits on its own: the retry ran the second only, and both are told
        expect(applied).toEqual([
          'AddsATable1899999999998',
          'TouchesBothTables1899999999999',
        ]);
        expect(retries.length).toBeGreaterThanOrEqual(1);
        expect(retries[0]).toMatch(/lock timeout/);
        const [{ count }] = await db.query<{ count: bigint }>(
          'SELECT count(*) AS count FROM plants',
          [],
        );
        expect(count).toBe(1n);
      } finally {
        await live.end();
        await migrating.destroy();
      }
    });
  }
});
