import type { CallbackPool } from './callback-pool';
import { ConnectionQueue, queueConnections } from './connection-queue';
import {
  DatabaseBusyError,
  DatabaseUnreachableError,
  isDatabaseBusy,
  isDatabaseUnavailable,
} from './database-errors';

/** Lets every queued continuation run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('ConnectionQueue', () => {
  beforeEach(() => jest.useFakeTimers({ doNotFake: ['setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it('gives its permits at once, then serves waiters first come, first served', async () => {
    const queue = new ConnectionQueue(2, { limit: 10, timeoutMs: 1000 });
    await queue.acquire();
    await queue.acquire();
    const served: string[] = [];
    const first = queue.acquire().then(() => served.push('first'));
    const second = queue.acquire().then(() => served.push('second'));
    await settle();
    expect(queue.waiting).toBe(2);
    expect(served).toEqual([]);

    queue.release();
    await first;
    expect(served).toEqual(['first']);
    queue.release();
    await second;
    expect(served).toEqual(['first', 'second']);
    expect(queue.waiting).toBe(0);
  });

  it('serves an earlier deadline first: a transaction run again keeps its place ahead of later arrivals', async () => {
    const queue = new ConnectionQueue(1, { limit: 10, timeoutMs: 1000 });
    await queue.acquire();
    const served: string[] = [];
    const wait = (name: string, deadline?: number) =>
      queue.acquire(deadline).then(() => served.push(name));
    const waits = [wait('new')];
    jest.advanceTimersByTime(10);
    waits.push(wait('newer'), wait('retried', Date.now() - 500));
    waits.push(wait('same deadline as retried', Date.now() - 500));
    for (let turn = 0; turn < 4; turn += 1) queue.release();
    await Promise.all(waits);
    expect(served).toEqual([
      'retried',
      'same deadline as retried',
      'new',
      'newer',
    ]);
  });

  it('refuses a waiter past the limit at once, as busy', async () => {
    const queue = new ConnectionQueue(1, { limit: 2, timeoutMs: 1000 });
    await queue.acquire();
    void queue.acquire().catch(() => undefined);
    void queue.acquire().catch(() => undefined);
    const refused = queue.acquire();
    await expect(refused).rejects.toThrow(
      new DatabaseBusyError(
        '2 requests were already waiting for a database connection',
      ),
    );
    expect(queue.waiting).toBe(2);
  });

  it('lets a waiter go at its deadline, as busy, and serves the next one in its place', async () => {
    const queue = new ConnectionQueue(1, { limit: 10, timeoutMs: 1000 });
    await queue.acquire();
    const early = queue.acquire(Date.now() + 300);
    const patient = queue.acquire();
    jest.advanceTimersByTime(300);
    await expect(early).rejects.toThrow(
      'no database connection came free within 300 ms',
    );
    expect(isDatabaseBusy(await early.catch((error: unknown) => error))).toBe(
      true,
    );
    expect(queue.waiting).toBe(1);
    queue.release();
    await expect(patient).resolves.toBeUndefined();
  });

  it('never waits longer than its bound, whatever deadline the caller asks for', async () => {
    const queue = new ConnectionQueue(1, { limit: 10, timeoutMs: 500 });
    await queue.acquire();
    const waiting = queue.acquire(Date.now() + 60_000);
    jest.advanceTimersByTime(500);
    await expect(waiting).rejects.toThrow(
      'no database connection came free within 500 ms',
    );
  });

  it('ends every wait at once with the error it is given', async () => {
    const queue = new ConnectionQueue(1, { limit: 10, timeoutMs: 1000 });
    await queue.acquire();
    const waits = [queue.acquire(), queue.acquire()];
    const away = new DatabaseUnreachableError('the database is away');
    queue.refuseWaiting(away);
    for (const wait of waits) await expect(wait).rejects.toBe(away);
    expect(queue.waiting).toBe(0);
  });

  it('keeps a released permit for the next caller when nobody waits', async () => {
    const queue = new ConnectionQueue(1, { limit: 10, timeoutMs: 1000 });
    await queue.acquire();
    queue.release();
    await expect(queue.acquire()).resolves.toBeUndefined();
  });
});

describe('queueConnections', () => {
  /** A pool that hands out connections at once, and records each release. */
  function fakePool(fail?: Error) {
    const released: unknown[] = [];
    const pool: CallbackPool = {
      connect: (callback) =>
        fail
          ? callback(fail, undefined, () => undefined)
          : callback(undefined, { client: true }, (error) =>
              released.push(error ?? 'released'),
            ),
    };
    return { pool, released };
  }

  const take = (pool: CallbackPool) =>
    new Promise<{
      error?: Error;
      release: (error?: unknown) => void;
    }>((resolve) =>
      pool.connect((error, _client, release) => resolve({ error, release })),
    );

  it('takes a permit per connection and gives it back once, however often released', async () => {
    const { pool, released } = fakePool();
    const queue = new ConnectionQueue(1, { limit: 10, timeoutMs: 1000 });
    queueConnections(pool, queue, () => undefined);
    const first = await take(pool);
    const second = take(pool);
    await settle();
    expect(queue.waiting).toBe(1);

    first.release();
    first.release();
    await second;
    expect(released).toEqual(['released', 'released']);
    // the second release gave back no second permit
    const third = take(pool);
    await settle();
    expect(queue.waiting).toBe(1);
    (await second).release();
    await third;
  });

  it("passes the pool's own failure on and gives the permit back", async () => {
    const refused = new Error('password authentication failed for user "x"');
    const { pool } = fakePool(refused);
    const queue = new ConnectionQueue(1, { limit: 10, timeoutMs: 1000 });
    queueConnections(pool, queue, () => undefined);
    expect((await take(pool)).error).toBe(refused);
    expect((await take(pool)).error).toBe(refused);
  });

  it('answers a connection the server refuses, and every wait behind it at once, as unreachable', async () => {
    const refused = Object.assign(
      new Error('connect ECONNREFUSED 127.0.0.1:5432'),
      { code: 'ECONNREFUSED' },
    );
    let connect!: () => void;
    const pool: CallbackPool = {
      connect: (callback) => {
        connect = () => callback(refused, undefined, () => undefined);
      },
    };
    const queue = new ConnectionQueue(1, { limit: 10, timeoutMs: 60_000 });
    queueConnections(pool, queue, () => undefined);
    const first = take(pool);
    const behind = [take(pool), take(pool)];
    await settle();
    expect(queue.waiting).toBe(2);
    connect();
    for (const taken of [first, ...behind]) {
      const { error } = await taken;
      expect(error).toBeInstanceOf(DatabaseUnreachableError);
      expect(error?.message).toBe('connect ECONNREFUSED 127.0.0.1:5432');
      expect(isDatabaseUnavailable(error)).toBe(true);
    }
  });

  it("answers a wait past the caller's deadline with a busy error, without touching the pool", async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate'] });
    try {
      const { pool } = fakePool();
      const queue = new ConnectionQueue(1, { limit: 10, timeoutMs: 10_000 });
      queueConnections(pool, queue, () => Date.now() + 200);
      await take(pool);
      const waiting = take(pool);
      jest.advanceTimersByTime(200);
      const { error } = await waiting;
      expect(error).toBeInstanceOf(DatabaseBusyError);
    } finally {
      jest.useRealTimers();
    }
  });
});
