import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { createTestDatabase } from './helpers/postgres';
import {
  runCliProcess,
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';
import { databaseReader, ENGINE, makeTempFolder } from './helpers/test-app';

/**
 * Idempotency-Key where it matters: services that die mid-request, and several instances on
 * one database (PostgreSQL), each request over real HTTP to `node dist/main.js`.
 */
describe(`Idempotency-Key across processes (node dist/main.js, ${ENGINE})`, () => {
  let folder: ReturnType<typeof makeTempFolder>;
  let database: { url: string; drop: () => Promise<void> } | undefined;
  let env: Record<string, string>;
  let token: string;
  let leaseMs: number;
  const running: ServiceProcess[] = [];

  beforeEach(async () => {
    folder = makeTempFolder();
    if (ENGINE === 'postgres') {
      database = await createTestDatabase();
    } else {
      writeFileSync(join(folder.path, 'store.sqlite'), '');
    }
    env = {
      DATABASE_URL:
        database?.url ?? `sqlite:${join(folder.path, 'store.sqlite')}`,
      RATE_LIMIT_PER_TOKEN: '1000000',
    };
    const cliStarted = performance.now();
    token = (await runCliProcess(['tokens', 'create', '--name', 'retry'], env))
      .lastLine;
    // a dead attempt's lease must outlast a restart, which takes what a start of the CLI takes
    // some times over: on a busy machine, several seconds (docs/testing.md)
    leaseMs = 3_000 + 5 * Math.ceil(performance.now() - cliStarted);
    env.IDEMPOTENCY_LEASE = `${leaseMs}ms`;
  });

  afterEach(async () => {
    for (const service of running.splice(0)) {
      service.child.kill('SIGKILL');
      await service.exited;
    }
    await database?.drop();
    database = undefined;
    folder.remove();
  });

  async function start(): Promise<ServiceProcess> {
    const service = await startServiceProcess(env);
    running.push(service);
    return service;
  }

  async function kill(service: ServiceProcess): Promise<void> {
    service.child.kill('SIGKILL');
    expect(await service.exited).toBe('SIGKILL');
    running.splice(running.indexOf(service), 1);
  }

  const PLANT = '{"id":77,"name":"Phoenix Palm"}';

  function post(service: ServiceProcess, key: string, body = PLANT) {
    return fetch(`${service.baseUrl}/plants`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
        'Idempotency-Key': key,
      },
      body,
    });
  }

  async function query<T>(sql: string, ...parameters: unknown[]) {
    const reader = databaseReader(
      ENGINE,
      ENGINE === 'postgres'
        ? env.DATABASE_URL
        : env.DATABASE_URL.slice('sqlite:'.length),
    );
    try {
      return await reader.query<T>(sql, parameters);
    } finally {
      await reader.close();
    }
  }

  const plantCount = async () =>
    Number(
      (
        await query<{ n: bigint }>(
          'SELECT count(*) AS n FROM plants WHERE id = 77',
        )
      )[0].n,
    );

  /**
   * Holds the plants table's write lock from outside the service, so that a create waits
   * in the middle: on PostgreSQL an uncommitted row with the same id, after the service has
   * leased the key; on SQLite the file's write lock, which its claim of the key waits for.
   */
  async function blockCreates(): Promise<() => Promise<void>> {
    if (ENGINE === 'postgres') {
      const client = new Client({ connectionString: env.DATABASE_URL });
      await client.connect();
      await client.query('BEGIN');
      await client.query(
        "INSERT INTO plants (id, name) VALUES (77, 'in the way')",
      );
      return async () => {
        await client.query('ROLLBACK');
        await client.end();
      };
    }
    const db = new Database(env.DATABASE_URL.slice('sqlite:'.length));
    db.exec('BEGIN IMMEDIATE');
    return () => {
      db.exec('ROLLBACK');
      db.close();
      return Promise.resolve();
    };
  }

  async function until(condition: () => Promise<boolean>, what: string) {
    const deadline = Date.now() + leaseMs + 15_000;
    while (!(await condition())) {
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  it('a create cut off by SIGKILL mid-request: retried after a restart, it is made exactly once', async () => {
    const first = await start();
    const unblock = await blockCreates();
    const cutOff = post(first, 'killed-1').catch(() => undefined);
    if (ENGINE === 'postgres') {
      // the key is leased, and the create waits for the row in its way
      await until(
        async () =>
          (
            await query(
              "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO \"plants\"%'",
            )
          ).length === 1,
        'the create to wait for its lock',
      );
      expect(await query('SELECT status FROM idempotency_keys')).toEqual([
        { status: null },
      ]);
    } else {
      // the claim waits for the file's write lock; nothing of the service shows it
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    await kill(first);
    await cutOff;
    await unblock();
    expect(await plantCount()).toBe(0);

    const second = await start();
    if (ENGINE === 'postgres') {
      // the dead attempt's lease holds the key for IDEMPOTENCY_LEASE
      const held = await post(second, 'killed-1');
      expect(held.status).toBe(409);
      expect(held.headers.get('retry-after')).toBe('1');
      await until(
        async () => (await post(second, 'killed-1')).status !== 409,
        'the lease to run out',
      );
    } else {
      const created = await post(second, 'killed-1');
      expect(created.status).toBe(200);
      expect(created.headers.get('idempotent-replayed')).toBeNull();
    }
    const again = await post(second, 'killed-1');
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.text()).toBe(PLANT);
    expect(await plantCount()).toBe(1);
  });

  it(`50 concurrent requests with one key${ENGINE === 'postgres' ? ', split over two instances' : ''}: one create, the rest replayed or 409, none failing`, async () => {
    const instances =
      ENGINE === 'postgres'
        ? await Promise.all([start(), start()])
        : [await start()];
    const answers = await Promise.all(
      Array.from({ length: 50 }, async (_, index) => {
        const response = await post(
          instances[index % instances.length],
          'fifty',
        );
        return {
          status: response.status,
          replayed: response.headers.get('idempotent-replayed'),
          retryAfter: response.headers.get('retry-after'),
          text: await response.text(),
        };
      }),
    );
    const statuses = answers.map(({ status }) => status);
    expect(
      statuses.filter((status) => status !== 200 && status !== 409),
    ).toEqual([]);
    const created = answers.filter(
      ({ status, replayed }) => status === 200 && replayed === null,
    );
    expect(created).toHaveLength(1);
    for (const answer of answers) {
      if (answer.status === 200) expect(answer.text).toBe(PLANT);
      else expect(answer.retryAfter).toBe('1');
    }
    expect(await plantCount()).toBe(1);
  });
});
