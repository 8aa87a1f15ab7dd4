import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { migrationClasses } from './helpers/migrations';
import { createTestDatabase, describeWithPostgres } from './helpers/postgres';
import {
  runCliProcess,
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver';

/** Starts `count` instances at the same instant, as a Deployment's rollout does. */
function startTogether(
  count: number,
  env: Record<string, string>,
): Promise<ServiceProcess[]> {
  return Promise.all(
    Array.from({ length: count }, () => startServiceProcess(env)),
  );
}

async function stopAll(instances: ServiceProcess[]): Promise<void> {
  for (const instance of instances) instance.child.kill('SIGTERM');
  await Promise.all(instances.map((instance) => instance.exited));
}

async function queryDatabase<T>(url: string, sql: string): Promise<T[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

const postgresMigrations = migrationClasses('postgres');

describeWithPostgres('instances started together on one database', () => {
  it.each([
    ['an empty database', 0],
    ['an empty database, again', 0],
    ['an empty database, a third time', 0],
    ['a database one migration behind', postgresMigrations.length - 1],
  ])(
    'on %s, three start at once: each migration is applied once and all serve',
    async (_case, alreadyApplied) => {
      const database = await createTestDatabase();
      try {
        if (alreadyApplied > 0) {
          const outdated = new DataSource({
            type: 'postgres',
            url: database.url,
            migrations: postgresMigrations.slice(0, alreadyApplied),
            // as the service runs them: a migration may run outside a transaction
            migrationsTransactionMode: 'each',
          });
          await outdated.initialize();
          await outdated.runMigrations();
          await outdated.destroy();
        }
        const instances = await startTogether(3, {
          DATABASE_URL: database.url,
        });
        try {
          for (const instance of instances) {
            expect(
              (await fetch(`${instance.baseUrl}/health/ready`)).status,
            ).toBe(200);
          }
          const applied = await queryDatabase<{ name: string }>(
            database.url,
            'SELECT name FROM migrations ORDER BY id',
          );
          expect(applied.map(({ name }) => name)).toEqual(
            postgresMigrations.map((migration) => migration.name),
          );
        } finally {
          await stopAll(instances);
        }
      } finally {
        await database.drop();
      }
    },
  );
});

describeWithPostgres(
  'three service instances on one PostgreSQL database',
  () => {
    let database: Awaited<ReturnType<typeof createTestDatabase>>;
    let instances: ServiceProcess[];
    let receiver: WebhookReceiver;
    let failingReceiver: WebhookReceiver;
    let token: string;

    beforeAll(async () => {
      database = await createTestDatabase();
      receiver = await WebhookReceiver.start();
      failingReceiver = await WebhookReceiver.start((_req, res) =>
        res.writeHead(500).end(),
      );
      const env = {
        DATABASE_URL: database.url,
        WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
        // the dispatchers poll and retry often, so that they race for the same attempts
        WEBHOOKS_POLL_INTERVAL: '20ms',
        WEBHOOKS_RETRY_BASE: '100ms',
        WEBHOOKS_RETRY_MAX_DELAY: '400ms',
        // long enough for several attempts a delivery however loaded the machine is: the
        // test below needs retries, sent by any of the three dispatchers
        WEBHOOKS_RETRY_WINDOW: '4s',
        // every attempt is what this counts: no pause of the failing receiver. Its 42
        // deliveries make at most about 12 attempts each in the window (100, 200, then 400 ms
        // apart), some 500 failures in a row, half of what pauses it; at 50 to 200 ms apart
        // a quick dispatcher made 1000 and paused it (a minute, past the test's wait)
        WEBHOOKS_FAILURES_BEFORE_PAUSE: '1000',
      };
      // all at once on the empty database: the migrations are taken in turns
      instances = await startTogether(3, env);
      token = (
        await runCliProcess(['tokens', 'create', '--name', 'multi'], env)
      ).lastLine;
      for (const url of [receiver.url, failingReceiver.url]) {
        expect(
          (await runCliProcess(['webhooks', 'add', '--url', url], env)).status,
        ).toBe(0);
      }
    });

    afterAll(async () => {
      await stopAll(instances ?? []);
      await receiver.close();
      await failingReceiver.close();
      await database.drop();
    });

    const call = (
      instance: ServiceProcess,
      method: string,
      path: string,
      body?: string,
    ) =>
      fetch(`${instance.baseUrl}${path}`, {
        method,
        headers: {
          Authorization: `Bearer ${token}`,
          'Content-Type': 'application/json',
        },
        body,
      });

    it('gives exactly one 200 per id when every instance gets the same creates at once', async () => {
      const ids = Array.from(
        { length: 40 },
        (_, i) => 9_007_199_254_740_993n + BigInt(i),
      );
      const outcomes = await Promise.all(
        ids.map(async (id) => {
          const body = `{"id":${id},"name":"Shared ${id}"}`;
          const statuses = await Promise.all(
            instances.map((instance) =>
              call(instance, 'POST', '/plants', body).then((r) => r.status),
            ),
          );
          return statuses.sort().join(',');
        }),
      );
      expect(outcomes).toEqual(Array(40).fill('200,400,400'));
    });

    it('reads and deletes across instances', async () => {
      const [a, b, c] = instances;
      expect(
        (await call(a, 'POST', '/plants', '{"id":1,"name":"Roaming"}')).status,
      ).toBe(200);
      expect(await (await call(b, 'GET', '/plants/1')).text()).toBe(
        '{"id":1,"name":"Roaming"}',
      );
      expect((await call(c, 'DELETE', '/plants/1')).status).toBe(204);
      expect((await call(a, 'GET', '/plants/1')).status).toBe(404);
      expect((await call(b, 'DELETE', '/plants/1')).status).toBe(404);
    });

    it('sends each delivery once, though every dispatcher sees it', async () => {
      // 40 shared creates, 1 roaming create and its delete, one subscription to every event
      const received = await receiver.waitFor(42, 20_000);
      await new Promise((resolve) => setTimeout(resolve, 1000));
      expect(receiver.received).toHaveLength(42);
      const ids = received.map((webhook) => webhook.headers['webhook-id']);
      expect(new Set(ids).size).toBe(42);
      const deleted = received.filter(
        (webhook) => webhook.headers['webhook-event-type'] === 'plant.deleted',
      );
      expect(deleted.map((webhook) => webhook.body)).toEqual([
        '{"id":1,"name":"Roaming"}',
      ]);
    });

    it('sends each attempt to a failing receiver once: as many requests as attempts recorded', async () => {
      const deliveries = await eventually(
        () =>
          queryDatabase<{ id: string; attempts: number; status: string }>(
            database.url,
            `SELECT d.id, d.attempts, d.status FROM webhook_deliveries d
             JOIN webhook_subscriptions s ON s.id = d.subscription_id
            WHERE s.url = '${failingReceiver.url}'`,
          ),
        (rows) =>
          rows.length === 42 && rows.every(({ status }) => status === 'failed'),
        30_000,
      );
      const sends = new Map<string, number>();
      for (const { headers } of failingReceiver.received) {
        const id = String(headers['webhook-id']);
        sends.set(id, (sends.get(id) ?? 0) + 1);
      }
      const attempts = deliveries.reduce((sum, row) => sum + row.attempts, 0);
      // retried, by three dispatchers polling every 20 ms: more than one attempt a delivery
      expect(attempts).toBeGreaterThan(42 * 2);
      expect(failingReceiver.received).toHaveLength(attempts);
      for (const { id, attempts: recorded } of deliveries) {
        expect([id, sends.get(id)]).toEqual([id, recorded]);
      }
    });
  },
);

describeWithPostgres(
  'an instance frozen in the middle of an attempt (SIGSTOP)',
  () => {
    it('lets another instance send once its claim runs out, and counts the late attempt when it wakes', async () => {
      const database = await createTestDatabase();
      let release = () => {};
      const held = new Promise<void>((resolve) => (release = resolve));
      let holding: () => void = () => {};
      const firstArrived = new Promise<void>((resolve) => (holding = resolve));
      // the first attempt is held unanswered; every later one is answered at once
      const receiver = await WebhookReceiver.start(
        (_request, response, index) => {
          if (index > 0) return void response.end();
          holding();
          void held.then(() => response.end());
        },
      );
      const env = {
        DATABASE_URL: database.url,
        WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOKS_POLL_INTERVAL: '100ms',
        // a claim lasts the timeout and 2 s more: 3 s here
        WEBHOOKS_TIMEOUT: '1s',
      };
      const instances: ServiceProcess[] = [];
      try {
        const frozen = await startServiceProcess(env);
        instances.push(frozen);
        const token = (
          await runCliProcess(['tokens', 'create', '--name', 'f'], env)
        ).lastLine;
        expect(
          (await runCliProcess(['webhooks', 'add', '--url', receiver.url], env))
            .status,
        ).toBe(0);
        const created = await fetch(`${frozen.baseUrl}/plants`, {
          method: 'POST',
          headers: {
            Authorization: `Bearer ${token}`,
            'Content-Type': 'application/json',
          },
          body: '{"id": 1, "name": "Frozen"}',
        });
        expect(created.status).toBe(200);
        await firstArrived;
        frozen.child.kill('SIGSTOP');
        // another instance takes the delivery once the frozen one's claim has run out
        instances.push(await startServiceProcess(env));
        await receiver.waitFor(2, 20_000);
        // the other instance has recorded its delivery: the frozen one's result, when it
        // wakes, matches no pending row, and must still count
        await eventually(
          () =>
            queryDatabase<{ status: string }>(
              database.url,
              'SELECT status FROM webhook_deliveries',
            ),
          (rows) => rows[0]?.status === 'delivered',
          20_000,
        );
        frozen.child.kill('SIGCONT');
        release();
        const [delivery] = await eventually(
          () =>
            queryDatabase<{ status: string; attempts: number }>(
              database.url,
              'SELECT status, attempts FROM webhook_deliveries',
            ),
          (rows) => rows[0]?.attempts === 2,
          20_000,
        );
        // give the woken instance time to do anything more it would
        await new Promise((resolve) => setTimeout(resolve, 2000));
        expect(delivery.status).toBe('delivered');
        const ids = receiver.received.map(
          ({ headers }) => headers['webhook-id'],
        );
        expect(ids).toHaveLength(2);
        expect(new Set(ids).size).toBe(1);
        expect(
          await queryDatabase<{ attempts: number }>(
            database.url,
            'SELECT attempts FROM webhook_deliveries',
          ),
        ).toEqual([{ attempts: 2 }]);
      } finally {
        release();
        for (const instance of instances) instance.child.kill('SIGCONT');
        await stopAll(instances);
        await receiver.close();
        await database.drop();
      }
    });
  },
);
