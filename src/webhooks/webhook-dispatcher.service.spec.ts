import { Logger } from '@nestjs/common';
import type { Repository } from 'typeorm';
import type { WebhooksConfig } from '../config/webhooks.config';
import { DatabaseAvailability } from '../database/database-availability';
import type { OutboxEvent } from '../events/outbox-event.entity';
import { Metrics } from '../metrics/metrics';
import type { DeliveryClaims } from './delivery-claims';
import type { OwedEvents } from './owed-events';
import { WebhookDispatcher } from './webhook-dispatcher.service';
import type { WebhookDelivery } from './webhook-delivery.entity';
import type { AttemptOutcome, WebhookSender } from './webhook-sender';
import type { WebhookSubscription } from './webhook-subscription.entity';

const CONFIG: WebhooksConfig = {
  allowPrivateNetworks: true,
  timeoutMs: 1000,
  retryBaseMs: 1000,
  retryMaxDelayMs: 10_000,
  retryWindowMs: 60_000,
  pollIntervalMs: 60_000,
  maxInFlight: 4,
  maxInFlightPerSubscription: 2,
  failuresBeforePause: 5,
  pauseMs: 60_000,
  retentionMs: 7 * 86_400_000,
  failedRetentionMs: 30 * 86_400_000,
  retentionIntervalMs: 600_000,
};

function delivery(id: string, subscriptionId: string): WebhookDelivery {
  return {
    id,
    subscriptionId,
    eventId: `event-${id}`,
    status: 'pending',
    attempts: 0,
    nextAttemptAt: new Date(0),
    lastAttemptAt: null,
    lastStatusCode: null,
    lastError: null,
    createdAt: new Date(0),
    claimedUntil: null,
  };
}

/**
 * The dispatcher over repositories that hold `due` rows per subscription in memory: each due
 * query reports the subscription it asked for and its limit; `claimFails` says which claims
 * throw.
 */
function dispatcherOver(
  due: Record<string, WebhookDelivery[]>,
  claimFails: (id: string) => boolean = () => false,
  settled: () => number = () => 1,
  beforeClaims: () => void = () => undefined,
  /** Subscriptions owed their events (resumed, so the poll pays them), and how they are paid. */
  {
    owing = [],
    owed = {},
  }: { owing?: string[]; owed?: Partial<OwedEvents> } = {},
) {
  const asked: { subscription: string; limit: number }[] = [];
  const sent: string[] = [];
  const finish: (() => void)[] = [];
  let subscription = '';
  const query: Record<string, (...args: unknown[]) => unknown> = {};
  for (const name of ['where', 'andWhere', 'orderBy']) {
    query[name] = (_sql: unknown, parameters?: unknown) => {
      const id = (parameters as { id?: unknown } | undefined)?.id;
      if (typeof id === 'string' && name === 'where') subscription = id;
      return query;
    };
  }
  query.limit = (limit: unknown) => {
    asked.push({ subscription, limit: limit as number });
    return query;
  };
  query.getMany = () => {
    const limit = asked[asked.length - 1].limit;
    return Promise.resolve((due[subscription] ?? []).splice(0, limit));
  };
  // one statement claims a poll's deliveries: it fails as a whole
  const claims = {
    claim: (deliveries: WebhookDelivery[]) => {
      const failing = deliveries.find(({ id }) => claimFails(id));
      return failing
        ? Promise.reject(new Error(`claim of ${failing.id} failed`))
        : Promise.resolve(new Set(deliveries.map(({ id }) => id)));
    },
  } as unknown as DeliveryClaims;
  const incremented: string[] = [];
  const deliveries = {
    createQueryBuilder: () => query,
    update: () => Promise.resolve({ affected: settled() }),
    increment: ({ id }: { id: string }) => {
      incremented.push(id);
      return Promise.resolve({ affected: 1 });
    },
  } as unknown as Repository<WebhookDelivery>;
  const subscriptions = {
    findBy: () =>
      Promise.resolve(
        Object.keys(due).map((id) => ({
          id,
          url: `http://127.0.0.1/${id}`,
          secret: 'whsec_c2VjcmV0',
          removedAt: null,
          consecutiveFailures: 0,
          pausedUntil: null,
          owedSince: owing.includes(id) ? new Date(0) : null,
        })),
      ),
  } as unknown as Repository<WebhookSubscription>;
  const events = {
    findBy: ({ id }: { id: { value: string[] } }) => {
      beforeClaims();
      return Promise.resolve(
        id.value.map((eventId) => ({
          id: eventId,
          type: 'plant.added',
          payload: '{"id":1,"name":"Fern"}',
        })),
      );
    },
  } as unknown as Repository<OutboxEvent>;
  const sender = {
    send: ({ id }: { id: string }) =>
      new Promise<AttemptOutcome>((resolve) => {
        sent.push(id);
        finish.push(() =>
          resolve({ delivered: true, result: 'success', statusCode: 204 }),
        );
      }),
  } as unknown as WebhookSender;
  const dispatcher = new WebhookDispatcher(
    deliveries,
    subscriptions,
    events,
    sender,
    claims,
    owed as OwedEvents,
    new DatabaseAvailability(),
    CONFIG,
    new Metrics(false),
  );
  return { dispatcher, asked, sent, finish, incremented };
}

describe('WebhookDispatcher', () => {
  beforeAll(() => {
    Logger.overrideLogger(false);
  });

  it('asks each subscription for at most its share of the free slots', async () => {
    const rows = (subscription: string) =>
      Array.from({ length: 5 }, (_, i) =>
        delivery(`${subscription}${i}`, subscription),
      );
    const { dispatcher, asked, finish } = dispatcherOver({
      a: rows('a'),
      b: rows('b'),
      c: rows('c'),
    });
    await dispatcher['poll']();
    // 4 free slots over 3 subscriptions, 2 at most each
    expect(asked.map(({ limit }) => limit).sort()).toEqual([1, 1, 2]);
    expect(asked.reduce((sum, { limit }) => sum + limit, 0)).toBe(4);
    finish.forEach((end) => end());
    await dispatcher.beforeApplicationShutdown();
  });

  it("sends the others' deliveries when paying the events owed to one subscription fails", async () => {
    const paid: string[] = [];
    const { dispatcher, sent, finish } = dispatcherOver(
      { a: [delivery('a0', 'a')], b: [delivery('b0', 'b')] },
      undefined,
      undefined,
      undefined,
      {
        owing: ['a', 'b'],
        owed: {
          deliverBatch: (id) => {
            paid.push(id);
            return id === 'a'
              ? Promise.reject(new Error('a deadlock, again'))
              : Promise.resolve(0);
          },
          settle: () => Promise.resolve(0),
        },
      },
    );
    await dispatcher['poll']();
    expect(paid.sort()).toEqual(['a', 'b']);
    expect(sent.sort()).toEqual(['a0', 'b0']);
    finish.forEach((end) => end());
    await dispatcher.beforeApplicationShutdown();
  });

  it('keeps no slot for a claim that failed: the next poll has them all', async () => {
    const { dispatcher, asked, sent, finish } = dispatcherOver(
      {
        a: [delivery('a0', 'a'), delivery('a1', 'a')],
        b: [delivery('b0', 'b'), delivery('b1', 'b')],
      },
      (id) => id === 'a1',
    );
    await dispatcher['poll']();
    expect(sent).toEqual([]);
    asked.length = 0;
    await dispatcher['poll']();
    expect(asked.reduce((sum, { limit }) => sum + limit, 0)).toBe(4);
    finish.forEach((end) => end());
    await dispatcher.beforeApplicationShutdown();
  });

  it('sends what it claims when the poll took longer than the margin of a claim (a loaded database)', async () => {
    jest.useFakeTimers({
      now: Date.now(),
      doNotFake: [
        'hrtime',
        'nextTick',
        'performance',
        'queueMicrotask',
        'setImmediate',
        'clearImmediate',
        'setInterval',
        'clearInterval',
        'setTimeout',
        'clearTimeout',
      ],
    });
    try {
      // the poll's queries before the claim take 3 s, past the 2 s by which a claim outlasts
      // the attempt's timeout: a claim dated from the poll's start would be too short
      const { dispatcher, sent, finish } = dispatcherOver(
        {
          a: [delivery('a0', 'a')],
          b: [delivery('b0', 'b')],
          c: [delivery('c0', 'c')],
        },
        () => false,
        () => 1,
        () => jest.setSystemTime(Date.now() + 3_000),
      );
      await dispatcher['poll']();
      expect([...sent].sort()).toEqual(['a0', 'b0', 'c0']);
      finish.forEach((end) => end());
      await dispatcher.beforeApplicationShutdown();
    } finally {
      jest.useRealTimers();
    }
  });

  it('frees a slot when an attempt ends, and no subscription gets past its cap', async () => {
    const rows = Array.from({ length: 6 }, (_, i) => delivery(`a${i}`, 'a'));
    const { dispatcher, asked, sent, finish } = dispatcherOver({ a: rows });
    await dispatcher['poll']();
    expect(sent).toEqual(['a0', 'a1']);
    await dispatcher['poll']();
    // subscription a is at its cap of 2: not even asked
    expect(asked).toHaveLength(1);
    finish.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
    await dispatcher['poll']();
    expect(asked[asked.length - 1]).toEqual({ subscription: 'a', limit: 1 });
    expect(sent).toEqual(['a0', 'a1', 'a2']);
    finish.forEach((end) => end());
    await dispatcher.beforeApplicationShutdown();
  });

  it('does not send when its claim ran out before the attempt could start (a frozen process)', async () => {
    const { dispatcher, sent } = dispatcherOver({ a: [delivery('a0', 'a')] });
    const clock = Date.now.bind(Date);
    // every claim is made; by the time the attempt starts, the process was stopped a while
    jest
      .spyOn(Date, 'now')
      .mockImplementation(() => clock() + CONFIG.timeoutMs + 2_001);
    try {
      await dispatcher['poll']();
      await new Promise((resolve) => setImmediate(resolve));
      expect(sent).toEqual([]);
    } finally {
      jest.restoreAllMocks();
      await dispatcher.beforeApplicationShutdown();
    }
  });

  it('counts an attempt whose result comes after another instance settled the delivery', async () => {
    const { dispatcher, sent, finish, incremented } = dispatcherOver(
      { a: [delivery('a0', 'a')] },
      () => false,
      () => 0,
    );
    await dispatcher['poll']();
    expect(sent).toEqual(['a0']);
    finish.forEach((end) => end());
    await Promise.all(dispatcher['inFlight'].values());
    expect(incremented).toEqual(['a0']);
    await dispatcher.beforeApplicationShutdown();
  });
});
