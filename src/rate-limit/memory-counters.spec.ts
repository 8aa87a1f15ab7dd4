import { MemoryCounters, SWEEP_INTERVAL_MS } from './memory-counters';

describe('MemoryCounters', () => {
  let counters: MemoryCounters;
  const perMinute = { windowMs: 60_000, limit: 3, blockMs: 0 };

  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-11-26T00:00:00Z') });
    counters = new MemoryCounters();
  });

  afterEach(() => {
    counters.onModuleDestroy();
    jest.useRealTimers();
  });

  it('counts hits in a window and blocks past the limit until the window ends', async () => {
    for (let hit = 1; hit <= 3; hit += 1) {
      await expect(counters.hit('k', perMinute)).resolves.toEqual({
        hits: hit,
        resetMs: 60_000,
        blockedMs: 0,
      });
    }
    jest.advanceTimersByTime(1000);
    await expect(counters.hit('k', perMinute)).resolves.toEqual({
      hits: 4,
      resetMs: 59_000,
      blockedMs: 59_000,
    });
    // blocked hits are not counted
    await expect(counters.hit('k', perMinute)).resolves.toMatchObject({
      hits: 4,
    });
  });

  it('starts a new window when the last one is over, without waiting for a sweep', async () => {
    const short = { windowMs: 1000, limit: 1, blockMs: 0 };
    await counters.hit('k', short);
    await expect(counters.hit('k', short)).resolves.toMatchObject({
      blockedMs: 1000,
    });
    jest.advanceTimersByTime(1500); // well before the first sweep
    await expect(counters.hit('k', short)).resolves.toEqual({
      hits: 1,
      resetMs: 1000,
      blockedMs: 0,
    });
  });

  it('keeps a key blocked for its block duration, through window ends and sweeps', async () => {
    const guesses = { windowMs: 1000, limit: 1, blockMs: 900_000 };
    await counters.hit('k', guesses);
    await expect(counters.hit('k', guesses)).resolves.toMatchObject({
      blockedMs: 900_000,
    });
    jest.advanceTimersByTime(3 * SWEEP_INTERVAL_MS);
    await expect(counters.blockedFor('k')).resolves.toBe(
      900_000 - 3 * SWEEP_INTERVAL_MS,
    );
    await expect(counters.hit('k', guesses)).resolves.toMatchObject({
      blockedMs: 900_000 - 3 * SWEEP_INTERVAL_MS,
    });
    jest.advanceTimersByTime(900_000);
    await expect(counters.blockedFor('k')).resolves.toBe(0);
  });

  it('tells how long a key is blocked without counting a hit', async () => {
    await expect(counters.blockedFor('unknown')).resolves.toBe(0);
    await counters.hit('k', perMinute);
    await expect(counters.blockedFor('k')).resolves.toBe(0);
    await expect(counters.hit('k', perMinute)).resolves.toMatchObject({
      hits: 2,
    });
  });

  it('counts keys apart', async () => {
    const once = { windowMs: 60_000, limit: 1, blockMs: 0 };
    await counters.hit('a', once);
    await expect(counters.hit('b', once)).resolves.toMatchObject({
      hits: 1,
      blockedMs: 0,
    });
  });

  it('sweeps only keys whose window and block are both over', async () => {
    await counters.hit('window', { windowMs: 1000, limit: 5, blockMs: 0 });
    await counters.hit('blocked', {
      windowMs: 1000,
      limit: 0,
      blockMs: 60_000,
    });
    await counters.hit('long', { windowMs: 60_000, limit: 5, blockMs: 0 });
    expect(counters.size).toBe(3);
    jest.advanceTimersByTime(SWEEP_INTERVAL_MS);
    expect(counters.size).toBe(2);
    jest.advanceTimersByTime(6 * SWEEP_INTERVAL_MS);
    expect(counters.size).toBe(0);
  });
});
