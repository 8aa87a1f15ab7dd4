import { Logger } from '@nestjs/common';
import {
  IdempotencySweeper,
  SWEEP_BATCH,
  SWEEP_BATCHES_PER_RUN,
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
});
