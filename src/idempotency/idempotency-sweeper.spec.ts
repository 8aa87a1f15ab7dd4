import { Logger } from '@nestjs/common';
import type { AppConfig } from '../config/app.config';
import { BACKLOG_PAUSE_MS } from '../database/periodic-upkeep';
import {
  IdempotencySweeper,
  SWEEP_BATCH,
  SWEEP_BATCHES_PER_RUN,
  SWEEP_INTERVAL_MS,
} from './idempotency-sweeper';
import type { IdempotencyStore } from './idempotency.store';

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

const config = {
  idempotency: { ttlMs: 24 * 3600_000, leaseMs: 30_000 },
} as AppConfig;

describe('IdempotencySweeper', () => {
  beforeEach(() => {
    jest.useFakeTimers();
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
  });

  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('works off a backlog run after run, BACKLOG_PAUSE_MS apart, not one run a minute', async () => {
    // three tokens at their default limits create 18,000 keys a minute: five minutes of them
    const store = storeOf(90_000);
    const sweeper = new IdempotencySweeper(
      store as unknown as IdempotencyStore,
      config,
    );
    sweeper.onApplicationBootstrap();
    try {
      // the first run: its bound of batches, 20 ms apart
      await jest.advanceTimersByTimeAsync(SWEEP_INTERVAL_MS + 500);
      expect(store.left).toBe(90_000 - SWEEP_BATCH * SWEEP_BATCHES_PER_RUN);
      // the other 80,000 within a few seconds, not eight more minutes
      await jest.advanceTimersByTimeAsync(10_000);
      expect(store.left).toBe(0);
      // and then a run an interval again
      const sweeps = store.sweeps;
      await jest.advanceTimersByTimeAsync(SWEEP_INTERVAL_MS - BACKLOG_PAUSE_MS);
      expect(store.sweeps).toBeLessThanOrEqual(sweeps + 1);
    } finally {
      sweeper.beforeApplicationShutdown();
    }
  });

  it('says whether it stopped with work left', async () => {
    const sweeper = new IdempotencySweeper(
      storeOf(
        SWEEP_BATCH * SWEEP_BATCHES_PER_RUN + 1,
      ) as unknown as IdempotencyStore,
      config,
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
});
