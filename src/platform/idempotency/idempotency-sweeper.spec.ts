import { Logger } from '@nestjs/common';
import {
  IdempotencySweeper,
  SWEEP_BATCH,
  SWEEP_BATCHES_PER_RUN,
  SWEEP_INTERVAL_MS,
} from './idempotency-sweeper';
import type { IdempotencyStore } from './idempotency.store';
import type { IdempotencySettings } from './idempotency.settings';

/** A store of `expired` keys, each sweep deleting up to its batch of them. */
function storeOf(expired: number) {
  const store = {
    left: expired,
    sweeps: 0,
    sweep: (_now: Date, batch: number) => {
      store.sweeps += 1;
      const deleted = Math.min(batch, store.left);
      store.left -= deleted;
      return Promise.resolve(deleted);
    },
  };
  return store;
}

const settings: IdempotencySettings = {
  IDEMPOTENCY_TTL: 24 * 3600_000,
  IDEMPOTENCY_LEASE: 30_000,
};

describe('IdempotencySweeper', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });

  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('says whether it stopped with work left', async () => {
    const sweeper = new IdempotencySweeper(
      storeOf(
        SWEEP_BATCH * SWEEP_BATCHES_PER_RUN + 1,
      ) as unknown as IdempotencyStore,
      settings,
    );
    const first = sweeper.sweep(new Date());
    await jest.advanceTimersByTimeAsync(1000);
    expect(await first).toEqual({
      deleted: SWEEP_BATCH * SWEEP_BATCHES_PER_RUN,
      more: true,
    });
    const second = sweeper.sweep(new Date());
    await jest.advanceTimersByTimeAsync(1000);
    expect(await second).toEqual({ deleted: 1, more: false });
  });
  it('runs every minute, or every IDEMPOTENCY_TTL when that is shorter', () => {
    const sweeperWith = (ttlMs: number) =>
      new IdempotencySweeper(storeOf(0) as unknown as IdempotencyStore, {
        ...settings,
        IDEMPOTENCY_TTL: ttlMs,
      });
    expect(sweeperWith(24 * 3600_000).schedule).toEqual({
      every: SWEEP_INTERVAL_MS,
    });
    expect(sweeperWith(5000).schedule).toEqual({ every: 5000 });
  });

  it('says in a run how many keys it deleted, when any, and whether more are left', async () => {
    const log = jest.mocked(Logger.prototype.log);
    const nextBatch = () => Promise.resolve(true);
    const full = new IdempotencySweeper(
      storeOf(
        SWEEP_BATCH * SWEEP_BATCHES_PER_RUN + 1,
      ) as unknown as IdempotencyStore,
      settings,
    );
    const tick = new Date();
    await expect(
      full.run({
        tick,
        signal: new AbortController().signal,
        now: () => tick,
        nextBatch,
      }),
    ).resolves.toBe(true);
    expect(log).toHaveBeenCalledWith(
      `deleted ${SWEEP_BATCH * SWEEP_BATCHES_PER_RUN} expired idempotency keys`,
    );
    log.mockClear();
    const empty = new IdempotencySweeper(
      storeOf(0) as unknown as IdempotencyStore,
      settings,
    );
    await expect(
      empty.run({
        tick,
        signal: new AbortController().signal,
        now: () => tick,
        nextBatch,
      }),
    ).resolves.toBe(false);
    expect(log).not.toHaveBeenCalled();
  });
});
