import { Module } from '@nestjs/common';
import { ApplicationConfig } from '@nestjs/core';
import { AppModule } from '../src/app.module';
import { ServiceDeclarations } from '../src/cli/service-declarations';
import { DataSource, type EntityManager, QueryFailedError } from 'typeorm';
import { EntitySql } from '../src/platform/database/entity-sql';
import { findForUpdate } from '../src/platform/database/row-locks';
import { ClosingUpdateChangedNothing } from '../src/platform/database/transaction-context';
import { PortableDataSource } from '../src/platform/database/portable-data-source';
import { SERIALIZABLE_LOCK_WAIT_MS } from '../src/platform/database/transaction-runner';
import { describeRequestProblem } from '../src/platform/database/database-errors';
import { EventPublisher } from '../src/platform/events/event-publisher';
import { createOrdersTables } from './fixtures/orders/create-tables';
import { ORDER_PLACED } from './fixtures/orders/order.events';
import { OrdersFixtureModule } from './fixtures/orders/orders.module';
import { OrdersService } from './fixtures/orders/orders.service';
import { StockItem } from './fixtures/orders/stock-item.entity';
import { startTestApp, type TestApp } from './helpers/test-app';
import { paceOf } from './helpers/pace';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A promise and the function that resolves it. */
function signal() {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => (resolve = done));
  return { promise, resolve };
}

// Business rules in TypeScript, with real transactions on both engines (docs/conventions.md,
// "Business rules"), through the fixture module test/fixtures/orders: stock, orders, an event.
describe(`transactions (${process.env.TEST_ENGINE ?? 'sqlite'})`, () => {
  let testApp: TestApp;
  let orders: OrdersService;
  let dataSource: DataSource;
  let token: string;

  beforeAll(async () => {
    testApp = await startTestApp({
      imports: [OrdersFixtureModule],
      // a subscription that wants every event, so that events are written to the outbox
      env: { WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true' },
    });
    orders = testApp.app.get(OrdersService);
    dataSource = testApp.app.get(DataSource);
    await createOrdersTables(dataSource);
    token = await testApp.issueToken();
    await testApp
      .http()
      .post('/webhooks/subscriptions')
      .set('Authorization', `Bearer ${token}`)
      .send({ url: 'http://127.0.0.1:9/every-event' })
      .expect(201);
  });

  afterAll(() => testApp.close());

  async function stock(plantId: bigint, quantity: number) {
    await dataSource.getRepository(StockItem).insert({ plantId, quantity });
  }

  async function ordersOf(plantId: bigint) {
    return testApp.query<{ quantity: bigint }>(
      'SELECT quantity FROM fixture_orders WHERE plant_id = ?',
      plantId,
    );
  }

  async function eventsOf(plantId: bigint) {
    const rows = await testApp.query<{ payload: string }>(
      "SELECT payload FROM events WHERE type = 'fixture-order.placed'",
    );
    return rows
      .map(({ payload }) => payload)
      .filter((payload) => payload.includes(`"plantId":${plantId},`));
  }

  it("never lets a rollback touch another request's acknowledged write", async () => {
    await stock(1n, 5);
    const open = signal();
    const failing = orders.place(1n, 1, async () => {
      open.resolve();
      await sleep(300);
      throw new Error('rolled back on purpose');
    });
    await open.promise;
    // another request writes while the transaction is open (then: supertest sends on it),
    // and is answered 200
    const create = testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .send({ id: 424242, name: 'Acknowledged' })
      .then((response) => response);
    await expect(failing).rejects.toThrow('rolled back on purpose');
    expect((await create).status).toBe(200);

    await testApp
      .http()
      .get('/plants/424242')
      .set('Authorization', `Bearer ${token}`)
      .expect(200, { id: 424242, name: 'Acknowledged' });
    expect(await orders.inStock(1n)).toBe(5);
    expect(await ordersOf(1n)).toEqual([]);
    expect(await eventsOf(1n)).toEqual([]);
  });

  it.each([
    ['its row locked (findForUpdate)', 2n, 'place'],
    ['at SERIALIZABLE, retried on conflicts', 12n, 'placeSerializable'],
  ] as const)(
    'holds the stock rule, written in TypeScript, under 50 concurrent orders, %s',
    async (_, plantId, method) => {
      await stock(plantId, 10);
      const results = await Promise.allSettled(
        Array.from({ length: 50 }, () => orders[method](plantId, 1)),
      );
      const placed = results.filter(({ status }) => status === 'fulfilled');
      const refused = results.flatMap((result) =>
        result.status === 'rejected' ? [(result.reason as Error).message] : [],
      );
      expect(placed).toHaveLength(10);
      expect(refused).toEqual(
        Array(40).fill(
          `plant ${plantId} has 0 in stock, fewer than the 1 ordered`,
        ),
      );
      expect(await orders.inStock(plantId)).toBe(0);
      expect(await ordersOf(plantId)).toHaveLength(10);
      expect(await eventsOf(plantId)).toHaveLength(10);
    },
  );

  it('makes a transaction that wants a locked row wait for it, then read it as the holder left it', async () => {
    await stock(13n, 5);
    const held = signal();
    const first = orders.place(13n, 2, async () => {
      held.resolve();
      await sleep(300);
    });
    await held.promise;
    const second = orders.place(13n, 3);
    await first;
    await second;
    expect(await orders.inStock(13n)).toBe(0);
    await expect(orders.place(13n, 1)).rejects.toThrow(
      'plant 13 has 0 in stock, fewer than the 1 ordered',
    );
  });

  it('refuses findForUpdate outside a transaction, and at SERIALIZABLE, on every engine', async () => {
    const repository = dataSource.getRepository(StockItem);
    await expect(findForUpdate(repository, { plantId: 1n })).rejects.toThrow(
      'findForUpdate(StockItem) was called outside a transaction: call it from a method marked @LockingTransaction()',
    );
    await expect(
      dataSource.transaction(() => findForUpdate(repository, { plantId: 1n })),
    ).rejects.toThrow(
      'findForUpdate(StockItem) runs in a SERIALIZABLE transaction: mark the method @LockingTransaction() (READ COMMITTED)',
    );
    await stock(14n, 1);
    await stock(15n, 2);
    expect(
      await dataSource.transaction('READ COMMITTED', () =>
        findForUpdate(repository, [{ plantId: 15n }, { plantId: 14n }]),
      ),
    ).toEqual([
      Object.assign(new StockItem(), { plantId: 14n, quantity: 1 }),
      Object.assign(new StockItem(), { plantId: 15n, quantity: 2 }),
    ]);
  });

  it('runs a keyed request to an @Idempotent() route at the level of the rule behind it', async () => {
    await stock(16n, 5);
    const place = () =>
      testApp
        .http()
        .post('/fixture-orders')
        .set('Authorization', `Bearer ${token}`)
        .set('Idempotency-Key', 'order-16')
        .send({ plantId: 16, quantity: 2 });
    // the rule's findForUpdate found READ COMMITTED, not the runner's SERIALIZABLE
    const first = await place().expect(201);
    const repeat = await place().expect(201);
    expect(repeat.headers['idempotent-replayed']).toBe('true');
    expect(repeat.body).toEqual(first.body);
    expect(await orders.inStock(16n)).toBe(3);
  });

  it('takes the level of the first transaction to join, and refuses one that joins too late to change it', async () => {
    const portable = dataSource as PortableDataSource;
    const repository = dataSource.getRepository(StockItem);
    await stock(17n, 1);
    expect(
      await portable.adoptingTransaction('SERIALIZABLE', () =>
        dataSource.transaction('READ COMMITTED', () =>
          findForUpdate(repository, { plantId: 17n }),
        ),
      ),
    ).toHaveLength(1);
    // a statement first: the level is fixed, on PostgreSQL as on SQLite
    await expect(
      portable.adoptingTransaction('SERIALIZABLE', async () => {
        await repository.count();
        return dataSource.transaction('READ COMMITTED', () =>
          findForUpdate(repository, { plantId: 17n }),
        );
      }),
    ).rejects.toThrow(
      "a READ COMMITTED transaction joined a transaction opened at SERIALIZABLE after statements ran in it, too late to change its level: declare the level on the route (@Idempotent({ isolation: 'READ COMMITTED' }))",
    );
  });

  it('bounds a row-lock wait at SERIALIZABLE on PostgreSQL, where waiting cannot help, and leaves READ COMMITTED to wait', async () => {
    const levelAndWait = async (manager: EntityManager) => {
      const [{ transaction_isolation: level }] = await manager.query<
        { transaction_isolation: string }[]
      >('SHOW transaction_isolation');
      const [{ lock_timeout: wait }] =
        await manager.query<{ lock_timeout: string }[]>('SHOW lock_timeout');
      return [level, wait];
    };
    const portable = dataSource as PortableDataSource;
    if (testApp.engine !== 'postgres') {
      // one level; the lock of another process on the file (the CLI, a second instance) is
      // waited for, better-sqlite3's 5 s, as BEGIN IMMEDIATE takes it
      expect(
        await portable.transaction('SERIALIZABLE', (manager) =>
          manager.query('PRAGMA busy_timeout'),
        ),
      ).toEqual([{ timeout: 5000n }]);
      return;
    }
    expect(await portable.transaction('SERIALIZABLE', levelAndWait)).toEqual([
      'serializable',
      `${SERIALIZABLE_LOCK_WAIT_MS}ms`,
    ]);
    expect(await portable.transaction('READ COMMITTED', levelAndWait)).toEqual([
      'read committed',
      '0',
    ]);
    // a transaction that takes the level of the rule behind it takes its bound with it
    expect(
      await portable.adoptingTransaction('SERIALIZABLE', () =>
        dataSource.transaction('READ COMMITTED', levelAndWait),
      ),
    ).toEqual(['read committed', '0']);
    expect(
      await portable.adoptingTransaction('READ COMMITTED', () =>
        dataSource.transaction('SERIALIZABLE', levelAndWait),
      ),
    ).toEqual(['serializable', `${SERIALIZABLE_LOCK_WAIT_MS}ms`]);
    // and the connection goes back to the pool as it was
    expect(await levelAndWait(dataSource.manager)).toEqual([
      'read committed',
      '0',
    ]);
  });

  it('leaves nothing behind when the transaction throws after its writes', async () => {
    await stock(3n, 4);
    await expect(
      orders.place(3n, 3, () => Promise.reject(new Error('after the writes'))),
    ).rejects.toThrow('after the writes');
    expect(await orders.inStock(3n)).toBe(4);
    expect(await ordersOf(3n)).toEqual([]);
    expect(await eventsOf(3n)).toEqual([]);
  });

  it('publishes the event with the change, its int64 exact', async () => {
    const plantId = 9223372036854775807n;
    await stock(plantId, 1);
    const order = await orders.place(plantId, 1);
    expect(
      (await eventsOf(plantId)).map(
        (payload) => JSON.parse(payload) as unknown,
      ),
    ).toEqual([
      // JSON.parse rounds the id: the text is compared below
      expect.objectContaining({ id: order.id, quantity: 1 }),
    ]);
    expect((await eventsOf(plantId))[0]).toContain(
      `"plantId":9223372036854775807,`,
    );
  });

  it('joins an outer transaction: the outer failure undoes the inner work', async () => {
    await stock(4n, 2);
    // a rule that locks its rows joins a READ COMMITTED transaction only
    await expect(
      dataSource.transaction('READ COMMITTED', async () => {
        await orders.place(4n, 2);
        expect(await orders.inStock(4n)).toBe(0);
        throw new Error('the outer work fails');
      }),
    ).rejects.toThrow('the outer work fails');
    expect(await orders.inStock(4n)).toBe(2);
    expect(await ordersOf(4n)).toEqual([]);
  });

  it("opens the data source's own manager's transactions the same way", async () => {
    await stock(9n, 3);
    await dataSource.manager.transaction(async (manager) => {
      await manager
        .getRepository(StockItem)
        .update({ plantId: 9n }, { quantity: 2 });
      // publish refuses outside a transaction this data source opened
      await testApp.app
        .get(EventPublisher)
        .publish(ORDER_PLACED, { id: 'by-hand', plantId: 9n, quantity: 1 });
    });
    expect(await orders.inStock(9n)).toBe(2);
    expect(await eventsOf(9n)).toHaveLength(1);
  });

  it('holds unrelated reads no longer than a slow transaction runs', async () => {
    await stock(5n, 1);
    await testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .send({ id: 5, name: 'Read meanwhile' })
      .expect(200);
    const read5 = () =>
      testApp.http().get('/plants/5').set('Authorization', `Bearer ${token}`);
    const pace = await paceOf(read5);
    const open = signal();
    let transactionEnded = 0;
    const slow = orders
      .place(5n, 1, async () => {
        open.resolve();
        await sleep(500);
      })
      .then(() => (transactionEnded = Date.now()));
    await open.promise;
    const read = await read5();
    const readEnded = Date.now();
    await slow;
    expect(read.status).toBe(200);
    // on SQLite the read waits for the transaction, on PostgreSQL not at all; never longer
    // (a margin of 1 s and of 20 reads at this machine's pace)
    expect(readEnded - transactionEnded).toBeLessThan(1000 + 20 * pace);
  });

  it("adds no guard or interceptor to requests: only the service's own run on each", () => {
    const config = testApp.app.get(ApplicationConfig);
    const names = (enhancers: object[]) =>
      enhancers.map((enhancer) => enhancer.constructor.name);
    expect(names(config.getGlobalGuards())).toEqual([
      'BearerGuard',
      'KnownQueryGuard',
      'JsonBodyGuard',
    ]);
    expect(names(config.getGlobalInterceptors())).toEqual([]);
  });

  it('finds the scopes and events the module declares in its own folder, at boot', async () => {
    // the service's own, whatever modules it has, and the fixture's, listed by type
    const service = new ServiceDeclarations(AppModule);
    const eventTypes = [...service.events.types, 'fixture-order.placed'].sort();
    const document = (await testApp.http().get('/openapi.json').expect(200))
      .body as {
      components: {
        securitySchemes: Record<string, { description: string }>;
        schemas: Record<string, { properties: Record<string, object> }>;
      };
      webhooks: Record<string, object>;
    };
    const { schemas, securitySchemes } = document.components;
    expect(securitySchemes.bearerAuth.description).toContain(
      '`fixture-orders:write` (place orders)',
    );
    expect(Object.keys(document.webhooks)).toContain('fixture-order.placed');
    expect(Object.keys(document.webhooks)).toHaveLength(eventTypes.length);
    expect(schemas.NewWebhookSubscription.properties.events).toMatchObject({
      items: { enum: eventTypes },
      maxItems: eventTypes.length,
    });
    expect(schemas.WebhookDelivery.properties.eventType).toMatchObject({
      enum: eventTypes,
    });
    await testApp
      .http()
      .post('/webhooks/subscriptions')
      .set('Authorization', `Bearer ${token}`)
      .send({
        url: 'http://127.0.0.1:9/fixture-orders',
        events: ['fixture-order.placed'],
      })
      .expect(201);

    // what the CLI reads, from the modules' metadata alone
    expect(service.scopes.all).toEqual(
      expect.arrayContaining([
        'plants:read',
        'plants:write',
        'webhooks:manage',
      ]),
    );
    expect(service.events.types).toEqual(
      expect.arrayContaining(['plant.added', 'plant.deleted']),
    );
    @Module({ imports: [AppModule, OrdersFixtureModule] })
    class WithOrders {}
    const declarations = new ServiceDeclarations(WithOrders);
    expect(declarations.scopes.all).toEqual([
      ...service.scopes.all,
      'fixture-orders:write',
    ]);
    expect(declarations.scopes.defaults).toEqual(service.scopes.defaults);
    expect(declarations.events.types).toEqual(eventTypes);
  });

  it("places an order over HTTP (201) with the module's own scope, a plain JSON quantity and an int64 plant id", async () => {
    await stock(9007199254740993n, 3);
    const place = (bearer: string, body: object) =>
      testApp
        .http()
        .post('/fixture-orders')
        .set('Authorization', `Bearer ${bearer}`)
        .set('Content-Type', 'application/json')
        .send(JSON.stringify(body).replace('"ID"', '9007199254740993'));
    const plantsOnly = await testApp.issueToken({
      scopes: ['plants:read', 'plants:write'],
    });
    expect(
      (await place(plantsOnly, { plantId: 'ID', quantity: 2 }).expect(403))
        .body,
    ).toEqual({
      error: 403,
      message: 'the bearer token lacks the scope fixture-orders:write',
    });
    const placed = await place(token, { plantId: 'ID', quantity: 2 }).expect(
      201,
    );
    expect(placed.text).toContain('"plantId":9007199254740993,');
    expect(
      (await place(token, { plantId: 'ID', quantity: 0 }).expect(400)).body
        .message,
    ).toContain('quantity must not be less than 1');
    expect(
      (await place(token, { plantId: 'ID', quantity: 2 }).expect(400)).body
        .message,
    ).toBe('plant 9007199254740993 has 1 in stock, fewer than the 2 ordered');
    expect(await orders.inStock(9007199254740993n)).toBe(1);
  });

  it('refuses to publish an event no module declares', async () => {
    const undeclared = { ...ORDER_PLACED, type: 'fixture-order.shipped' };
    await expect(
      dataSource.transaction(() =>
        testApp.app
          .get(EventPublisher)
          .publish(undeclared, { id: 'x', plantId: 1n, quantity: 1 }),
      ),
    ).rejects.toThrow(
      'fixture-order.shipped was published without being declared: import EventsModule.forFeature([...]) with it in its module',
    );
  });

  it('refuses to publish an event outside a transaction', async () => {
    await expect(
      testApp.app
        .get(EventPublisher)
        .publish(ORDER_PLACED, { id: 'x', plantId: 1n, quantity: 1 }),
    ).rejects.toThrow(
      'fixture-order.placed was published outside a transaction: publish from a method marked @Transactional()',
    );
  });

  it('binds EntitySql parameters by their number, in any order', async () => {
    await stock(6n, 7);
    const sql = new EntitySql(dataSource, StockItem);
    const $ = sql.parameter;
    // bound by order instead, this would ask for plant 7 with 6 in stock: no row
    expect(
      await sql.select(
        `SELECT plant_id, quantity FROM fixture_stock WHERE quantity = ${$(2)} AND plant_id = ${$(1)}`,
        [6n, 7],
      ),
    ).toEqual([Object.assign(new StockItem(), { plantId: 6n, quantity: 7 })]);
  });

  it('commits a transaction closed with an UPDATE only if the UPDATE changes a row, and rolls back all of it otherwise', async () => {
    await stock(9101n, 1);
    const sql = new EntitySql(dataSource, StockItem);
    const $ = sql.parameter;
    const restock = `UPDATE fixture_stock SET quantity = quantity + ${$(2)} WHERE plant_id = ${$(1)}`;
    const closedWith = (plantId: bigint) =>
      dataSource.transaction(async () => {
        await sql.execute(
          `INSERT INTO fixture_stock (plant_id, quantity) VALUES (${$(1)}, 5)`,
          [plantId + 100n],
        );
        sql.closeTransactionWith(restock, [plantId, 10]);
        return 'done';
      });

    await expect(closedWith(9101n)).resolves.toBe('done');
    expect(await orders.inStock(9101n)).toBe(11);
    expect(await orders.inStock(9201n)).toBe(5);

    await expect(closedWith(9102n)).rejects.toBeInstanceOf(
      ClosingUpdateChangedNothing,
    );
    expect(await orders.inStock(9202n)).toBe(0);

    expect(() => sql.closeTransactionWith(restock, [9101n, 1])).toThrow(
      'closeWith is for the statements of a transaction, and none runs here',
    );
    expect(await orders.inStock(9101n)).toBe(11);
  });

  it("runs a statement outside a transaction as TypeORM's runner does: rows, changed rows, booleans as numbers, failures as QueryFailedError", async () => {
    await stock(31n, 3);
    await stock(32n, 4);
    const portable = dataSource as PortableDataSource;
    const viaRunner = async (sql: string, parameters: unknown[]) => {
      const runner = dataSource.createQueryRunner();
      try {
        return await runner.query(sql, parameters, true);
      } finally {
        await runner.release();
      }
    };
    const $ = new EntitySql(dataSource, StockItem).parameter;
    const select = `SELECT plant_id, quantity FROM fixture_stock WHERE plant_id IN (${$(1)}, ${$(2)}) AND ${$(3)} ORDER BY plant_id`;
    const sql =
      testApp.engine === 'postgres' ? select : select.replace(/\?\d/g, '?');
    for (let twice = 0; twice < 2; twice += 1) {
      const direct = await portable.plainStatement(sql, [31n, 32n, true]);
      expect(
        (direct.records as { plant_id: bigint; quantity: unknown }[]).map(
          (row) => [String(row.plant_id), Number(row.quantity)],
        ),
      ).toEqual([
        ['31', 3],
        ['32', 4],
      ]);
      expect(direct.records).toEqual(
        (await viaRunner(sql, [31n, 32n, true])).records,
      );
    }
    const update =
      testApp.engine === 'postgres'
        ? 'UPDATE fixture_stock SET quantity = quantity + 1 WHERE plant_id IN ($1, $2)'
        : 'UPDATE fixture_stock SET quantity = quantity + 1 WHERE plant_id IN (?, ?)';
    expect((await portable.plainStatement(update, [31n, 32n])).affected).toBe(
      2,
    );
    const broken = await portable
      .plainStatement('SELECT no_such_column FROM fixture_stock', [])
      .catch((error: unknown) => error);
    expect(broken).toBeInstanceOf(QueryFailedError);
    expect((broken as QueryFailedError).query).toBe(
      'SELECT no_such_column FROM fixture_stock',
    );
  });

  it('refuses to run EntitySql on a data source other than the service’s', () => {
    expect(
      () =>
        new EntitySql(
          new DataSource({ type: 'better-sqlite3', database: ':memory:' }),
          StockItem,
        ),
    ).toThrow(
      "EntitySql runs on the service's PortableDataSource (database.module.ts)",
    );
  });

  it("answers a schema's deliberate refusals as the request's fault, in their own words", async () => {
    const negative = await dataSource
      .query('UPDATE fixture_stock SET quantity = -1')
      .catch((error: unknown) => error);
    expect(describeRequestProblem(negative)).toBe(
      'the change breaks the rule "stock_never_negative"',
    );

    const runner = dataSource.createQueryRunner();
    try {
      if (testApp.engine === 'postgres') {
        await runner.query(
          `CREATE FUNCTION fixture_closed() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION 'orders are closed on Sundays'; END $$`,
        );
        await runner.query(
          'CREATE TRIGGER fixture_closed BEFORE INSERT ON fixture_orders FOR EACH ROW EXECUTE FUNCTION fixture_closed()',
        );
      } else {
        await runner.query(
          `CREATE TRIGGER fixture_closed BEFORE INSERT ON fixture_orders
           BEGIN SELECT RAISE(ABORT, 'orders are closed on Sundays'); END`,
        );
      }
    } finally {
      await runner.release();
    }
    await stock(8n, 1);
    const closed = await orders.place(8n, 1).catch((error: unknown) => error);
    expect(describeRequestProblem(closed)).toBe('orders are closed on Sundays');
    expect(await orders.inStock(8n)).toBe(1);
  });
});
