import { AsyncLocalStorage } from 'node:async_hooks';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import {
  BUSY_MESSAGE,
  BUSY_RETRY_AFTER_SECONDS,
} from '../src/platform/common/errors/error-answers';
import type { CallbackPool } from '../src/platform/database/callback-pool';
import { EntitySql } from '../src/platform/database/entity-sql';
import { Plant } from '../src/modules/plants/plant.entity';
import { DatabaseAvailabilityService } from '../src/platform/database/database-availability.service';
import { SqlDeliveryStore } from '../src/modules/webhooks/sql-delivery-store';
import { WebhookSubscriptionsService } from '../src/modules/webhooks/webhook-subscriptions.service';
import {
  createTestDatabase,
  describeWithPostgres,
  testDatabaseName,
} from './helpers/postgres';
import {
  runCliProcess,
  runServiceToExit,
  startServiceProcess,
} from './helpers/service-process';
import { startTestApp, type TestApp } from './helpers/test-app';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver';

// the generator's own module (schematics/resource), plain JavaScript
const { generatorDatabaseName } =
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  require('../schematics/resource/migrations') as {
    generatorDatabaseName: (env: NodeJS.ProcessEnv) => string;
  };

/** A pg client as far as the test below taps it: its query, and the socket it writes to. */
interface PgSocket {
  write: (chunk: Buffer, ...rest: unknown[]) => boolean;
  prependListener: (event: 'data', listener: () => void) => void;
}
interface PgConnection {
  query: (...args: unknown[]) => unknown;
  connection: { stream: PgSocket };
}

const INT64_MIN = '-9223372036854775808';
const INT64_MAX = '9223372036854775807';

describeWithPostgres('the service on PostgreSQL', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let testApp: TestApp;
  let token: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    testApp = await startTestApp({
      env: {
        DATABASE_URL: database.url,
        WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOKS_POLL_INTERVAL: '50ms',
      },
    });
    token = await testApp.issueToken();
  });

  afterAll(async () => {
    await testApp.close();
    await database.drop();
  });

  const post = (body: string) =>
    testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/json')
      .send(body);
  const get = (path: string) =>
    testApp.http().get(path).set('Authorization', `Bearer ${token}`);
  const query = <T>(sql: string, parameters: unknown[] = []) =>
    testApp.app.get(DataSource).query<T>(sql, parameters);

  it.each([INT64_MIN, INT64_MAX, '9007199254740993'])(
    'stores, reads and returns the id %s exactly',
    async (id) => {
      await post(`{"id":${id},"name":"Exact","tag":"pg"}`).expect(
        200,
        `{"id":${id},"name":"Exact","tag":"pg"}`,
      );
      await get(`/plants/${id}`).expect(
        200,
        `{"id":${id},"name":"Exact","tag":"pg"}`,
      );
      expect(
        await query('SELECT id::text AS id FROM plants WHERE id = $1', [id]),
      ).toEqual([{ id }]);
    },
  );

  it('rejects a duplicate id with 400, leaving the stored plant untouched', async () => {
    const again = await post(`{"id":${INT64_MAX},"name":"Impostor"}`);
    expect(again.status).toBe(400);
    expect(again.body).toEqual({
      error: 400,
      message: `a plant with id ${INT64_MAX} already exists`,
    });
    await get(`/plants/${INT64_MAX}`).expect(
      200,
      `{"id":${INT64_MAX},"name":"Exact","tag":"pg"}`,
    );
  });

  it('gives exactly one 200 among concurrent creates of one id: the unique key decides', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 25 }, (_, i) =>
        post(`{"id":777,"name":"racer ${i}"}`).then((r) => r.status),
      ),
    );
    expect(statuses.filter((status) => status === 200)).toHaveLength(1);
    expect(statuses.filter((status) => status === 400)).toHaveLength(24);
  });

  it('pages, filters and deletes as on SQLite', async () => {
    for (let id = 1000; id < 1010; id += 1)
      await post(`{"id":${id},"name":"p${id}","tag":"page"}`).expect(200);
    const first = await get('/plants?tag=page&limit=4').expect(200);
    expect((first.body as { id: number }[]).map((plant) => plant.id)).toEqual([
      1000, 1001, 1002, 1003,
    ]);
    expect(first.headers.link).toMatch(/[?&]after=1003(&|>)/);
    await testApp
      .http()
      .delete('/plants/1000')
      .set('Authorization', `Bearer ${token}`)
      .expect(204);
    await testApp
      .http()
      .delete('/plants/1000')
      .set('Authorization', `Bearer ${token}`)
      .expect(404);
    await get('/plants/1000').expect(404);
  });

  it('answers 400, not 500, for U+0000, which PostgreSQL text cannot hold', async () => {
    const response = await post('{"id":2000,"name":"a\\u0000b"}');
    expect(response.status).toBe(400);
    expect(response.body.message).toMatch(/U\+0000/);
    expect(await query('SELECT id FROM plants WHERE id = 2000')).toEqual([]);
    // nothing stored can hold it, nor be compared with it: the same 400, from the same place
    const listed = await get('/plants?tag=%00');
    expect(listed.status).toBe(400);
    expect(listed.body.message).toMatch(/U\+0000/);
  });

  it('writes the webhook outbox in the statement that inserts the plant, and delivers it', async () => {
    const receiver = await WebhookReceiver.start();
    const subscriptions = testApp.app.get(WebhookSubscriptionsService);
    const subscription = await subscriptions.add({ url: receiver.url });
    try {
      await post(`{"id":${INT64_MIN.slice(0, -1)}7,"name":"Hooked"}`).expect(
        200,
      );
      const [webhook] = await receiver.waitFor(1);
      expect(webhook.body).toBe(
        `{"id":${INT64_MIN.slice(0, -1)}7,"name":"Hooked"}`,
      );
      await post(`{"id":${INT64_MIN.slice(0, -1)}7,"name":"Duplicate"}`).expect(
        400,
      );
      const rows = await query<{ n: string }[]>(
        'SELECT count(*) AS n FROM webhook_deliveries',
      );
      expect(rows).toEqual([{ n: '1' }]);
    } finally {
      await subscriptions.remove(subscription.id);
      await receiver.close();
    }
  });

  /**
   * A subscription left alone by the dispatcher (its receiver paused for an hour), so that the
   * test drives the store itself, as instances would.
   */
  async function pausedSubscription() {
    const subscriptions = testApp.app.get(WebhookSubscriptionsService);
    const { id } = await subscriptions.add({
      url: 'http://127.0.0.1:9/paused',
    });
    await query(
      `UPDATE webhook_subscriptions SET consecutive_failures = 1000, paused_until = now() + interval '1 hour' WHERE id = $1`,
      [id],
    );
    return { id, remove: () => subscriptions.remove(id) };
  }

  it('places an event committed late after those placed before it: the log only grows at its end, whatever the order of commits', async () => {
    const { remove } = await pausedSubscription();
    const store = testApp.app.get(SqlDeliveryStore);
    const writer = new Client({ connectionString: database.url });
    await writer.connect();
    try {
      // written first, committed last
      await writer.query('BEGIN');
      await writer.query(
        `INSERT INTO plants (id, name) VALUES (424242, 'Committed late')`,
      );
      await query(
        `INSERT INTO plants (id, name) VALUES (424243, 'Committed first')`,
      );
      const head = await store.sequence(1000);
      await writer.query('COMMIT');
      const later = await store.sequence(1000);
      const placed = await query<{ seq: string; payload: string }[]>(
        `SELECT seq::text, payload FROM events WHERE payload LIKE '%42424%' ORDER BY seq`,
      );
      expect(
        placed.map(
          ({ payload }) => (JSON.parse(payload) as { name: string }).name,
        ),
      ).toEqual(['Committed first', 'Committed late']);
      expect(BigInt(placed[0].seq)).toBe(head);
      expect(BigInt(placed[1].seq)).toBe(later);
      expect(later).toBe(head + 1n);
    } finally {
      await writer.end();
      await remove();
    }
  });

  it("makes each event's delivery once when instances sequence and move one cursor at the same time", async () => {
    const { id, remove } = await pausedSubscription();
    try {
      await query(
        `INSERT INTO plants (id, name) SELECT 525000 + n, 'Logged ' || n FROM generate_series(1, 300) AS n`,
      );
      const store = testApp.app.get(SqlDeliveryStore);
      const [lane] = (await store.lanes()).filter((lane) => lane.id === id);
      // each call runs on a pooled connection of its own, as another instance's would
      const heads = await Promise.all(
        Array.from({ length: 4 }, () => store.sequence(1000)),
      );
      const head = heads.reduce((most, seq) => (seq > most ? seq : most));
      const made = await Promise.all(
        Array.from({ length: 5 }, () =>
          store.materialize(lane, head, 1000, 1000, new Date()),
        ),
      );
      // one of them moved the cursor; the others found it moved, and made nothing
      expect(made.filter(({ made }) => made > 0)).toHaveLength(1);
      const [{ rows, events }] = await query<
        { rows: string; events: string }[]
      >(
        'SELECT count(*) AS rows, count(DISTINCT event_id) AS events FROM webhook_deliveries WHERE subscription_id = $1',
        [id],
      );
      expect({ rows, events }).toEqual({ rows: '300', events: '300' });
    } finally {
      await remove();
    }
  });

  it('works with the command-line tool on the same DATABASE_URL', async () => {
    const created = await runCliProcess(
      ['tokens', 'create', '--name', 'pg cli', '--scopes', 'plants:read'],
      {
        DATABASE_URL: database.url,
      },
    );
    expect(created.status).toBe(0);
    await testApp
      .http()
      .get('/plants?limit=1')
      .set('Authorization', `Bearer ${created.lastLine}`)
      .expect(200);
  });
});

describeWithPostgres(
  'the service on a PostgreSQL database it cannot use',
  () => {
    const serverUrl = () =>
      new URL(
        process.env.TEST_DATABASE_URL ??
          'postgres://postgres@127.0.0.1:5432/postgres',
      );
    const serverOf = (url: URL) => `${url.hostname}:${url.port || '5432'}`;
    const startOn = (url: URL) =>
      runServiceToExit({
        DATABASE_URL: url.toString(),
        PORT: '0',
        LOG_LEVEL: 'info',
      });

    it('does not start: one line naming the database and how to create it, and no retry', async () => {
      const url = serverUrl();
      url.pathname = '/plant_store_never_created';
      const server = serverOf(url);
      const { status, output, lines } = await startOn(url);
      expect(status).toBe(1);
      expect(lines).toEqual([
        expect.objectContaining({
          level: 60,
          msg: `the service could not start: PostgreSQL at ${server} has no database "plant_store_never_created": create it (createdb -h ${url.hostname} -p ${url.port || '5432'} -U ${url.username} plant_store_never_created), or name another in DATABASE_URL`,
        }),
      ]);
      expect(output).not.toContain('Retrying');
    });

    it('does not start when DATABASE_URL asks for TLS that the server does not have: one line saying which setting', async () => {
      const url = serverUrl();
      const client = new Client({ connectionString: url.toString() });
      await client.connect();
      const [{ ssl }] = (await client.query<{ ssl: string }>('SHOW ssl')).rows;
      await client.end();
      // the test server of this repository has none (.ci/run starts it so); one with TLS
      // answers sslmode=require, and the failure cannot be made
      expect(ssl).toBe('off');
      url.searchParams.set('sslmode', 'require');
      // every line JSON (node-postgres's warning about sslmode is a warn line of the log)
      const { status, lines } = await startOn(url);
      expect(status).toBe(1);
      expect(lines.filter(({ level }) => level >= 50)).toEqual([
        expect.objectContaining({
          level: 60,
          msg: `the service could not start: PostgreSQL at ${serverOf(url)} does not accept TLS, which DATABASE_URL asks for (sslmode): turn ssl on in the server's postgresql.conf, or take sslmode out of DATABASE_URL where the network between them is trusted`,
        }),
      ]);
    });

    it('does not start when PostgreSQL refuses its user: one line, the password never shown', async () => {
      const url = serverUrl();
      url.username = 'plant_store_no_such_role';
      url.password = 'hunter2';
      const server = serverOf(url);
      const { status, output, lines } = await startOn(url);
      expect(status).toBe(1);
      expect(lines).toEqual([
        expect.objectContaining({
          level: 60,
          msg: expect.stringMatching(
            new RegExp(
              `^the service could not start: PostgreSQL at ${server} refused (the password of )?user "plant_store_no_such_role": check the user`,
            ),
          ),
        }),
      ]);
      expect(output).not.toContain('hunter2');
    });
  },
);

describeWithPostgres('statements with parameters', () => {
  /** What the pool's one connection has prepared, after creating and reading three plants. */
  async function preparedAfterRequests(env: Record<string, string> = {}) {
    const database = await createTestDatabase();
    const testApp = await startTestApp({
      env: { DATABASE_URL: database.url, DB_POOL_SIZE: '1', ...env },
    });
    try {
      const token = await testApp.issueToken();
      for (const id of [1, 2, 3]) {
        await testApp
          .http()
          .post('/plants')
          .set('Authorization', `Bearer ${token}`)
          .send({ id, name: 'Basil' })
          .expect(200);
        await testApp
          .http()
          .get(`/plants/${id}`)
          .set('Authorization', `Bearer ${token}`)
          .expect(200);
      }
      return await testApp.app
        .get(DataSource)
        .query<
          { name: string; statement: string }[]
        >('SELECT name, statement FROM pg_prepared_statements ORDER BY name');
    } finally {
      await testApp.close();
      await database.drop();
    }
  }

  it('run as named statements, parsed once per connection', async () => {
    const prepared = await preparedAfterRequests();
    const selectById = prepared.filter(
      ({ statement }) =>
        statement ===
        'SELECT "id", "name", "tag", "version" FROM plants WHERE id = $1',
    );
    expect(selectById).toHaveLength(1);
    expect(selectById[0].name).toMatch(/^plant_store_\d+$/);
    expect(new Set(prepared.map(({ name }) => name)).size).toBe(
      prepared.length,
    );
  });

  it('run unnamed with DB_PREPARED_STATEMENTS=false, for poolers in transaction mode', async () => {
    expect(
      await preparedAfterRequests({ DB_PREPARED_STATEMENTS: 'false' }),
    ).toEqual([]);
  });
});

describeWithPostgres("a transaction's round trips", () => {
  /**
   * What the connections of `dataSource`'s pool write and read while `work` runs, in order: a
   * statement's verb as its message goes out (one not yet prepared on the connection carries
   * its text), and each answer as it arrives, before the client reads it and sends what waited
   * on it.
   */
  async function wireOf(
    dataSource: DataSource,
    work: () => Promise<unknown>,
  ): Promise<string[]> {
    const seen: string[] = [];
    const ours = new AsyncLocalStorage<true>();
    let recording = true;
    const record = (event: string) => {
      if (recording && seen.at(-1) !== event) seen.push(event);
    };
    // no word boundary before: a message's length bytes precede its text
    const verbOf = (text: string) =>
      /(START|WITH|SELECT|COMMIT)/.exec(text)?.[1];
    const tapped = new WeakSet<object>();
    const pool = (dataSource.driver as unknown as { master: CallbackPool })
      .master;
    const connect = pool.connect.bind(pool);
    pool.connect = (callback) =>
      connect((error, client, release) => {
        const connection = client as PgConnection;
        if (!error && !tapped.has(connection)) {
          tapped.add(connection);
          const query = connection.query.bind(connection);
          connection.query = (...args) => {
            const socket = connection.connection.stream;
            if (ours.getStore() && !tapped.has(socket)) {
              tapped.add(socket);
              const write = socket.write.bind(socket);
              socket.write = (chunk: Buffer, ...rest: unknown[]) => {
                // the first verb of a message: a closing UPDATE's text has a SELECT after WITH
                const verb = verbOf(chunk.toString('latin1'));
                if (verb) record(`wrote ${verb}`);
                return write(chunk, ...rest);
              };
              socket.prependListener('data', () => record('received'));
            }
            return query(...args);
          };
        }
        callback(error, client, release);
      });
    try {
      await ours.run(true, work);
    } finally {
      recording = false;
      pool.connect = connect;
    }
    return seen;
  }

  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let testApp: TestApp;
  let dataSource: DataSource;

  beforeAll(async () => {
    database = await createTestDatabase();
    testApp = await startTestApp({ env: { DATABASE_URL: database.url } });
    dataSource = testApp.app.get(DataSource);
  });

  afterAll(async () => {
    await testApp.close();
    await database.drop();
  });

  it('BEGIN goes out with the first statement: both are written before the server answers', async () => {
    const seen = await wireOf(dataSource, () =>
      dataSource.transaction('SERIALIZABLE', (manager) =>
        manager.query('SELECT $1::int AS "pipelined"', [1]),
      ),
    );
    expect(seen).toEqual([
      'wrote START',
      'wrote SELECT',
      'received',
      'wrote COMMIT',
      'received',
    ]);
  });

  it('a closing UPDATE goes out with COMMIT, written first, both before the server answers', async () => {
    await dataSource.query(
      "INSERT INTO plants (id, name, version) VALUES (1, 'Fern', 1)",
    );
    const plants = new EntitySql(dataSource, Plant);
    const seen = await wireOf(dataSource, () =>
      dataSource.transaction('SERIALIZABLE', async (manager) => {
        await manager.query('SELECT $1::int AS "first"', [1]);
        plants.closeTransactionWith(
          'UPDATE plants SET version = version + 1 WHERE id = $1',
          [1],
        );
      }),
    );
    expect(seen).toEqual([
      'wrote START',
      'wrote SELECT',
      'received',
      'wrote WITH',
      'wrote COMMIT',
      'received',
    ]);
    expect(await dataSource.query('SELECT version FROM plants')).toEqual([
      { version: 2 },
    ]);
  });
});

describeWithPostgres('a pool whose every connection is held', () => {
  it('answers work that waited past DB_BUSY_TIMEOUT 503 busy, nothing changed, while readiness stays 200 and no outage begins', async () => {
    const database = await createTestDatabase();
    const testApp = await startTestApp({
      env: {
        DATABASE_URL: database.url,
        DB_POOL_SIZE: '2',
        DB_BUSY_TIMEOUT: '1s',
      },
    });
    try {
      const token = await testApp.issueToken();
      const dataSource = testApp.app.get(DataSource);
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let holding = 0;
      const holders = [1, 2].map(() =>
        dataSource.transaction(async (manager) => {
          await manager.query('SELECT 1');
          holding += 1;
          await released;
        }),
      );
      while (holding < 2) await new Promise((resolve) => setImmediate(resolve));

      const create = await testApp
        .http()
        .post('/plants')
        .set('Authorization', `Bearer ${token}`)
        .send({ id: 1, name: 'Waited its turn' });
      expect(create.status).toBe(503);
      expect(create.headers['retry-after']).toBe(
        String(BUSY_RETRY_AFTER_SECONDS),
      );
      expect(create.body).toEqual({ error: 503, message: BUSY_MESSAGE });
      // readiness asks over a connection of its own
      await testApp.http().get('/health/ready').expect(200);
      expect(testApp.app.get(DatabaseAvailabilityService).answers).toBe(true);

      release();
      await Promise.all(holders);
      await testApp
        .http()
        .get('/plants/1')
        .set('Authorization', `Bearer ${token}`)
        .expect(404);
    } finally {
      await testApp.close();
      await database.drop();
    }
  });
});

describeWithPostgres('the databases the tests and the generator create', () => {
  const prefix = `ps_prefix_${process.pid}_`;

  it('are named with TEST_DATABASE_PREFIX, for a shared server', async () => {
    const saved = process.env.TEST_DATABASE_PREFIX;
    process.env.TEST_DATABASE_PREFIX = prefix;
    try {
      const database = await createTestDatabase();
      try {
        const client = new Client({ connectionString: database.url });
        await client.connect();
        const { rows } = await client.query<{ name: string }>(
          'SELECT current_database() AS name',
        );
        await client.end();
        expect(rows[0].name).toMatch(new RegExp(`^${prefix}[0-9a-f]{12}$`));
      } finally {
        await database.drop();
      }
    } finally {
      if (saved === undefined) delete process.env.TEST_DATABASE_PREFIX;
      else process.env.TEST_DATABASE_PREFIX = saved;
    }
  });

  it('are named with GENERATOR_DATABASE_PREFIX by the generator', () => {
    expect(
      generatorDatabaseName({ GENERATOR_DATABASE_PREFIX: prefix }),
    ).toMatch(new RegExp(`^${prefix}[0-9a-f]{12}$`));
    expect(generatorDatabaseName({})).toMatch(
      /^plant_store_generate_[0-9a-f]{12}$/,
    );
  });

  it.each([
    ['TEST_DATABASE_PREFIX', testDatabaseName],
    [
      'GENERATOR_DATABASE_PREFIX',
      (value: string) =>
        generatorDatabaseName({ GENERATOR_DATABASE_PREFIX: value }),
    ],
  ])(
    'refuses a %s that is no plain PostgreSQL name, saying what it must be',
    (variable, name) => {
      for (const bad of [
        'Upper_',
        'x"; DROP DATABASE postgres; --',
        '9x',
        'x'.repeat(52),
      ]) {
        expect(() => name(bad)).toThrow(
          `${variable} must be up to 51 lowercase letters, digits and _, not starting with a digit, got ${JSON.stringify(bad)}`,
        );
      }
    },
  );
});

describeWithPostgres(
  'the service on a PostgreSQL database whose autovacuum is off',
  () => {
    it('says so at boot, naming the tables, and serves', async () => {
      const database = await createTestDatabase();
      const env = { DATABASE_URL: database.url, LOG_LEVEL: 'warn' };
      try {
        // the schema, then a table of it without autovacuum
        const first = await startServiceProcess(env);
        first.child.kill('SIGTERM');
        await first.exited;
        const client = new Client({ connectionString: database.url });
        await client.connect();
        await client.query(
          'ALTER TABLE webhook_deliveries SET (autovacuum_enabled = false)',
        );
        // a CI server may run without it altogether (this machine's does): said first
        const server = (
          await client.query<{ autovacuum: string }>('SHOW autovacuum')
        ).rows[0].autovacuum;
        await client.end();
        const service = await startServiceProcess(env);
        try {
          const warned = await eventually(
            () =>
              service.lines().filter((line) => line.context === 'Autovacuum'),
            (lines) => lines.length >= (server === 'on' ? 1 : 2),
            5000,
          );
          expect(warned).toEqual([
            ...(server === 'on'
              ? []
              : [
                  expect.objectContaining({
                    level: 40,
                    msg: "PostgreSQL's autovacuum is off: the rows that retention and the idempotency sweep delete are never reclaimed, the tables and their indexes only grow, and the planner works from stale statistics; turn it on (autovacuum = on in postgresql.conf)",
                  }),
                ]),
            expect.objectContaining({
              level: 40,
              msg: "PostgreSQL's autovacuum is off for webhook_deliveries (autovacuum_enabled = false): the rows that retention and the idempotency sweep delete are never reclaimed, the tables and their indexes only grow, and the planner works from stale statistics; turn it on (ALTER TABLE webhook_deliveries RESET (autovacuum_enabled))",
            }),
          ]);
          expect((await fetch(`${service.baseUrl}/health/ready`)).status).toBe(
            200,
          );
        } finally {
          service.child.kill('SIGTERM');
          await service.exited;
        }
      } finally {
        await database.drop();
      }
    });
  },
);
