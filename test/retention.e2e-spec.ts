import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { OutboxEvent } from '../src/platform/events/outbox-event.entity';
import {
  GIVEN_UP_ERROR,
  RETENTION_BATCH,
  RetentionService,
} from '../src/modules/webhooks/retention.service';
import {
  WebhookDelivery,
  type DeliveryStatus,
} from '../src/modules/webhooks/webhook-delivery.entity';
import { WebhookDispatcher } from '../src/modules/webhooks/webhook-dispatcher.service';
import { WebhookSubscription } from '../src/modules/webhooks/webhook-subscription.entity';
import { EventHandlerState } from '../src/platform/events/event-handler.entity';
import { HANDLER_RETIRED_AFTER_MS } from '../src/platform/events/event-handlers.service';
import { startTestApp, type TestApp } from './helpers/test-app';
import { eventually } from './helpers/webhook-receiver';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

// Retention (docs/decisions.md, "Retention"), on the engine of the jest project
/**
 * The retention job's run of the tick the app started in, on empty tables, is over: no other
 * comes within the interval, and a test's own `prune` is the only one that sees its rows.
 */
async function bootRunDone(app: TestApp): Promise<void> {
  await eventually(
    () =>
      app.query<{ done_tick: unknown }>(
        'SELECT done_tick FROM scheduled_jobs WHERE name = ?',
        'webhooks.retention',
      ),
    (rows) => rows[0]?.done_tick != null,
  );
}

describe(`retention of events and deliveries (${process.env.TEST_ENGINE ?? 'sqlite'})`, () => {
  let testApp: TestApp;
  let dataSource: DataSource;
  let subscriptionId: string;
  let serial = 0;

  beforeAll(async () => {
    testApp = await startTestApp({
      env: {
        EVENTS_RETENTION: '1d',
        EVENTS_FAILED_RETENTION: '3d',
        WEBHOOKS_RETRY_WINDOW: '12h',
        RETENTION_INTERVAL: '1h',
      },
    });
    // stopped, so that the rows keep the status each test gives them
    await testApp.app.get(WebhookDispatcher).beforeApplicationShutdown();
    await bootRunDone(testApp);
    dataSource = testApp.app.get(DataSource);
    subscriptionId = randomUUID();
    await dataSource.getRepository(WebhookSubscription).insert({
      id: subscriptionId,
      url: 'https://receiver.example/hook',
      secret: 'whsec_x',
      eventTypes: null,
      removedAt: null,
      slot: 1,
    });
  });

  afterAll(() => testApp.close());

  /**
   * `count` events made `age` ago, each with a delivery of `status` (none when null), as the
   * dispatcher leaves them: placed in the log, and the subscription's cursor past them.
   */
  async function events(
    count: number,
    age: number,
    status: DeliveryStatus | null,
  ): Promise<void> {
    const createdAt = new Date(Date.now() - age);
    const ids = Array.from({ length: count }, () => (serial += 1));
    for (let start = 0; start < ids.length; start += 500) {
      const chunk = ids.slice(start, start + 500);
      await dataSource.getRepository(OutboxEvent).insert(
        chunk.map((n) => ({
          id: `evt_${n}`,
          type: 'plant.added',
          payload: '{}',
          createdAt,
          seq: BigInt(n),
        })),
      );
      if (status !== null) {
        await dataSource.getRepository(WebhookDelivery).insert(
          chunk.map((n) => ({
            id: `msg_${String(n).padStart(32, '0')}`,
            subscriptionId,
            eventId: `evt_${n}`,
            status,
            attempts: 0,
            nextAttemptAt: createdAt,
            createdAt,
          })),
        );
      }
    }
    await dataSource
      .getRepository(WebhookSubscription)
      .update({ id: subscriptionId }, { cursor: BigInt(serial) });
  }

  const count = async (table: 'events' | 'webhook_deliveries') =>
    Number(
      (
        await testApp.query<{ n: bigint }>(`SELECT count(*) AS n FROM ${table}`)
      )[0].n,
    );

  it('deletes what is past its retention, in batches, and keeps pending deliveries, recent rows and failures for longer', async () => {
    const many = 2 * RETENTION_BATCH + 500;
    await events(many, 2 * DAY, 'delivered');
    await events(10, 2 * DAY, 'cancelled');
    await events(5, 2 * DAY, 'failed');
    await events(5, 4 * DAY, 'failed');
    await events(20, HOUR, 'delivered');
    await events(5, HOUR, 'pending');
    await events(3, 2 * DAY, null);

    const pruned = await testApp.app.get(RetentionService).prune(new Date());
    expect(pruned).toEqual({
      givenUp: 0,
      cursorsMoved: 0,
      deliveries: many + 10 + 5,
      events: many + 10 + 5 + 3,
    });
    const left = await testApp.query<{ status: string; n: bigint }>(
      'SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status ORDER BY status',
    );
    expect(left.map(({ status, n }) => [status, Number(n)])).toEqual([
      ['delivered', 20],
      ['failed', 5],
      ['pending', 5],
    ]);
    // every delivery left still has its event, and no event is left without one
    expect(await count('events')).toBe(30);
    const orphans = await testApp.query(
      'SELECT d.id FROM webhook_deliveries d LEFT JOIN events e ON e.id = d.event_id WHERE e.id IS NULL',
    );
    expect(orphans).toEqual([]);

    // bounded: a second run finds nothing more
    expect(await testApp.app.get(RetentionService).prune(new Date())).toEqual({
      givenUp: 0,
      cursorsMoved: 0,
      deliveries: 0,
      events: 0,
    });
  });

  it('gives up the pending deliveries of a paused subscription older than the retry window, in batches, but not one being attempted, nor any of a subscription not paused', async () => {
    await dataSource.getRepository(WebhookDelivery).clear();
    await dataSource.getRepository(OutboxEvent).clear();
    const many = RETENTION_BATCH + 20;
    await events(many, 13 * HOUR, 'pending');
    // not paused: a delivery of its waits its turn, or its next try, whatever its age
    expect(
      (await testApp.app.get(RetentionService).prune(new Date())).givenUp,
    ).toBe(0);
    // a receiver paused for days: its deliveries were never attempted
    await dataSource
      .getRepository(WebhookSubscription)
      .update(
        { id: subscriptionId },
        { pausedUntil: new Date(Date.now() + DAY) },
      );
    await events(1, 13 * HOUR, 'pending');
    await events(3, 11 * HOUR, 'pending');
    const deliveries = dataSource.getRepository(WebhookDelivery);
    const inFlight = (
      await deliveries.find({
        where: { eventId: `evt_${serial - 3}` },
      })
    )[0];
    await deliveries.update(
      { id: inFlight.id },
      { claimedUntil: new Date(Date.now() + 60_000) },
    );

    const now = new Date();
    const pruned = await testApp.app.get(RetentionService).prune(now);
    expect(pruned).toEqual({
      givenUp: many,
      cursorsMoved: 0,
      deliveries: 0,
      events: 0,
    });
    const left = await testApp.query<{ status: string; n: bigint }>(
      'SELECT status, count(*) AS n FROM webhook_deliveries GROUP BY status ORDER BY status',
    );
    expect(left.map(({ status, n }) => [status, Number(n)])).toEqual([
      ['failed', many],
      ['pending', 4],
    ]);
    const givenUp = await deliveries.find({
      where: { status: 'failed' },
      take: 1,
    });
    expect(givenUp[0]).toMatchObject({
      lastError: GIVEN_UP_ERROR,
      attempts: 0,
      nextAttemptAt: now,
    });
    // kept for EVENTS_FAILED_RETENTION, like every failed delivery, with their events
    expect(await count('events')).toBe(many + 4);
    await dataSource
      .getRepository(WebhookSubscription)
      .update({ id: subscriptionId }, { pausedUntil: null });
  });

  it('brings back to now the retry, claim and pause times stored further ahead than any instance sets them, and no other', async () => {
    await dataSource.getRepository(WebhookDelivery).clear();
    await dataSource.getRepository(OutboxEvent).clear();
    await events(3, HOUR, 'pending');
    const deliveries = dataSource.getRepository(WebhookDelivery);
    const [far, near, claimed] = await deliveries.find({
      order: { eventId: 'ASC' },
    });
    const years = new Date(Date.now() + 3650 * DAY);
    // what an instance whose clock ran ten years ahead wrote, beside what a right one did
    await deliveries.update({ id: far.id }, { nextAttemptAt: years });
    const soon = new Date(Date.now() + 60_000);
    await deliveries.update({ id: near.id }, { nextAttemptAt: soon });
    await deliveries.update({ id: claimed.id }, { claimedUntil: years });
    const subscriptions = dataSource.getRepository(WebhookSubscription);
    await subscriptions.update({ id: subscriptionId }, { pausedUntil: years });

    const now = new Date();
    const retention = testApp.app.get(RetentionService);
    expect(await retention.pullBackTimesAhead(now)).toBe(3);
    expect(await deliveries.findOneByOrFail({ id: far.id })).toMatchObject({
      nextAttemptAt: now,
    });
    expect(await deliveries.findOneByOrFail({ id: near.id })).toMatchObject({
      nextAttemptAt: soon,
    });
    expect(
      (await deliveries.findOneByOrFail({ id: claimed.id })).claimedUntil,
    ).toBeNull();
    expect(
      (await subscriptions.findOneByOrFail({ id: subscriptionId })).pausedUntil,
    ).toEqual(now);
    expect(await retention.pullBackTimesAhead(new Date())).toBe(0);
    await subscriptions.update({ id: subscriptionId }, { pausedUntil: null });
  });

  it('runs by itself every RETENTION_INTERVAL', async () => {
    const ticking = await startTestApp({
      env: { EVENTS_RETENTION: '1d', RETENTION_INTERVAL: '100ms' },
    });
    try {
      const source = ticking.app.get(DataSource);
      const createdAt = new Date(Date.now() - 2 * DAY);
      await source.getRepository(OutboxEvent).insert({
        id: 'evt_ticking',
        type: 'plant.added',
        payload: '{}',
        createdAt,
      });
      const deadline = Date.now() + 10_000;
      while ((await source.getRepository(OutboxEvent).countBy({})) > 0) {
        if (Date.now() > deadline)
          throw new Error('the old event is still there');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      await ticking.close();
    }
  });

  it("keeps every event a cursor has not passed, and moves a paused subscription's cursor past those from before the retry window", async () => {
    const app = await startTestApp({
      env: { EVENTS_RETENTION: '1h', WEBHOOKS_RETRY_WINDOW: '12h' },
    });
    try {
      await app.app.get(WebhookDispatcher).beforeApplicationShutdown();
      await bootRunDone(app);
      const source = app.app.get(DataSource);
      const subscriptions = source.getRepository(WebhookSubscription);
      const subscription = (slot: number, pausedUntil: Date | null) => ({
        id: randomUUID(),
        url: `https://receiver.example/${slot}`,
        secret: 'whsec_x',
        eventTypes: null,
        removedAt: null,
        slot,
        cursor: 0n,
        pausedUntil,
      });
      const paused = subscription(1, new Date(Date.now() + DAY));
      const waiting = subscription(2, null);
      // one at a time: TypeORM re-reads a multi-row insert on SQLite in key order, not the
      // order given, and would give each object the other's id (typeorm/typeorm#10574)
      await subscriptions.insert(paused);
      await subscriptions.insert(waiting);
      const event = (seq: bigint, age: number) =>
        source.getRepository(OutboxEvent).insert({
          id: `evt_${seq}`,
          type: 'plant.added',
          payload: '{}',
          createdAt: new Date(Date.now() - age),
          seq,
        });
      await event(1n, 20 * HOUR);
      await event(2n, 13 * HOUR);
      await event(3n, 2 * HOUR);
      const retention = app.app.get(RetentionService);
      // the paused one gives up what is past the window; the other's cursor keeps every event
      expect(await retention.prune(new Date())).toEqual({
        givenUp: 0,
        cursorsMoved: 1,
        deliveries: 0,
        events: 0,
      });
      // as text: a failing bigint comparison cannot be reported by jest's workers
      const cursorOf = async (id: string) =>
        String((await subscriptions.findOneByOrFail({ id })).cursor);
      expect(await cursorOf(paused.id)).toBe('2');
      expect(await cursorOf(waiting.id)).toBe('0');

      // once nothing waits for them, the events both cursors passed go
      await subscriptions.update({ id: waiting.id }, { removedAt: new Date() });
      expect(await retention.prune(new Date())).toEqual({
        givenUp: 0,
        cursorsMoved: 0,
        deliveries: 0,
        events: 2,
      });
      expect(
        (await source.getRepository(OutboxEvent).find()).map(({ id }) => id),
      ).toEqual(['evt_3']);
    } finally {
      await app.close();
    }
  });
  it('keeps the events a live event handler has not handled, and lets a retired one go', async () => {
    const app = await startTestApp({ env: { EVENTS_RETENTION: '1h' } });
    try {
      await app.app.get(WebhookDispatcher).beforeApplicationShutdown();
      await bootRunDone(app);
      const source = app.app.get(DataSource);
      await source.getRepository(EventHandlerState).insert({
        name: 'fixture.behind',
        eventTypes: 'plant.added',
        cursor: 0n,
        seenAt: new Date(),
      });
      await source.getRepository(OutboxEvent).insert({
        id: 'evt_behind',
        type: 'plant.added',
        payload: '{}',
        createdAt: new Date(Date.now() - 2 * HOUR),
        seq: 1n,
      });
      const retention = app.app.get(RetentionService);
      expect((await retention.prune(new Date())).events).toBe(0);
      // no instance has run it for longer than HANDLER_RETIRED_AFTER_MS: retired
      await source
        .getRepository(EventHandlerState)
        .update(
          { name: 'fixture.behind' },
          { seenAt: new Date(Date.now() - HANDLER_RETIRED_AFTER_MS - HOUR) },
        );
      expect((await retention.prune(new Date())).events).toBe(1);
    } finally {
      await app.close();
    }
  });
});
