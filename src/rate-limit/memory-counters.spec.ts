import { MemoryCounters } from './memory-counters';

describe('MemoryCounters', () => {
  let counters: MemoryCounters;
  const perMinute = { windowMs: 60_000, limit: 3, blockMs: 0 };

  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-11-26T00:00:00Z') });
    counters = new MemoryCounters();
  });

  afterEach(() => {
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
    await expect(counters.blockedFor('k', perMinute)).resolves.toBe(59_000);
  });

  it('starts a new window when the last one is over', async () => {
    const short = { windowMs: 1000, limit: 1, blockMs: 0 };
    await counters.hit('k', short);
    await expect(counters.hit('k', short)).resolves.toMatchObject({
      blockedMs: 1000,
    });
    jest.advanceTimersByTime(1500);
    await expect(counters.hit('k', short)).resolves.toEqual({
      hits: 1,
      resetMs: 1000,
      blockedMs: 0,
    });
  });

  it('keeps a key blocked for its block duration, past the end of its window', async () => {
    const guesses = { windowMs: 1000, limit: 1, blockMs: 900_000 };
    await counters.hit('k', guesses);
    await expect(counters.hit('k', guesses)).resolves.toMatchObject({
      blockedMs: 900_000,
    });
    jest.advanceTimersByTime(30_000);
    await expect(counters.blockedFor('k', guesses)).resolves.toBe(870_000);
    await expect(counters.hit('k', guesses)).resolves.toMatchObject({
      blockedMs: 870_000,
    });
    jest.advanceTimersByTime(870_000);
    await expect(counters.blockedFor('k', guesses)).resolves.toBe(0);
  });

  it('tells how long a key is blocked without counting a hit', async () => {
    await expect(counters.blockedFor('unknown', perMinute)).resolves.toBe(0);
    await counters.hit('k', perMinute);
    await expect(counters.blockedFor('k', perMinute)).resolves.toBe(0);
    await expect(counters.hit('k', perMinute)).resolves.toMatchObject({
      hits: 2,
    });
  });

  it('counts keys apart, and rules apart', async () => {
    const once = { windowMs: 60_000, limit: 1, blockMs: 0 };
    await counters.hit('a', once);
    await expect(counters.hit('b', once)).resolves.toMatchObject({
      hits: 1,
      blockedMs: 0,
    });
    await expect(counters.hit('a', perMinute)).resolves.toMatchObject({
      hits: 1,
      blockedMs: 0,
    });
  });

  it('drops a key when its window or its block is over, so what it holds stays bounded', async () => {
    await counters.hit('window', { windowMs: 1000, limit: 5, blockMs: 0 });
    const guesses = { windowMs: 1000, limit: 1, blockMs: 60_000 };
    await counters.hit('blocked', guesses);
    await counters.hit('blocked', guesses);
    await counters.hit('long', { windowMs: 60_000, limit: 5, blockMs: 0 });
    expect(counters.keys().sort()).toEqual(['blocked', 'long', 'window']);
    jest.advanceTimersByTime(1000);
    expect(counters.keys().sort()).toEqual(['blocked', 'long']);
    jest.advanceTimersByTime(59_000);
    expect(counters.keys()).toEqual([]);
  });
});
