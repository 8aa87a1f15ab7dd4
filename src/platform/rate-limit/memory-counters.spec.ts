import { MemoryCounters } from './memory-counters';

describe('MemoryCounters', () => {
  let counters: MemoryCounters;

  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-11-26T00:00:00Z') });
    counters = new MemoryCounters();
  });

  afterEach(() => {
    jest.useRealTimers();
  });

  it('counts hits in a window and blocks past the limit until the window ends', async () => {
    const perMinute = counters.counter({
      windowMs: 60_000,
      limit: 3,
      blockMs: 0,
    });
    for (let hit = 1; hit <= 3; hit += 1) {
      await expect(perMinute.hit('k')).resolves.toEqual({
        hits: hit,
        resetMs: 60_000,
        blockedMs: 0,
      });
    }
    jest.advanceTimersByTime(1000);
    await expect(perMinute.hit('k')).resolves.toEqual({
      hits: 4,
      resetMs: 59_000,
      blockedMs: 59_000,
    });
    await expect(perMinute.blockedFor('k')).resolves.toBe(59_000);
  });

  it('starts a new window when the last one is over', async () => {
    const short = counters.counter({ windowMs: 1000, limit: 1, blockMs: 0 });
    await short.hit('k');
    await expect(short.hit('k')).resolves.toMatchObject({ blockedMs: 1000 });
    jest.advanceTimersByTime(1500);
    await expect(short.hit('k')).resolves.toEqual({
      hits: 1,
      resetMs: 1000,
      blockedMs: 0,
    });
  });

  it('keeps a key blocked for its block duration, past the end of its window', async () => {
    const guesses = counters.counter({
      windowMs: 1000,
      limit: 1,
      blockMs: 900_000,
    });
    await guesses.hit('k');
    await expect(guesses.hit('k')).resolves.toMatchObject({
      blockedMs: 900_000,
    });
    jest.advanceTimersByTime(30_000);
    await expect(guesses.blockedFor('k')).resolves.toBe(870_000);
    await expect(guesses.hit('k')).resolves.toMatchObject({
      blockedMs: 870_000,
    });
    jest.advanceTimersByTime(870_000);
    await expect(guesses.blockedFor('k')).resolves.toBe(0);
  });

  it('tells how long a key is blocked without counting a hit', async () => {
    const perMinute = counters.counter({
      windowMs: 60_000,
      limit: 3,
      blockMs: 0,
    });
    await expect(perMinute.blockedFor('unknown')).resolves.toBe(0);
    await perMinute.hit('k');
    await expect(perMinute.blockedFor('k')).resolves.toBe(0);
    await expect(perMinute.hit('k')).resolves.toMatchObject({ hits: 2 });
  });

  it('counts keys apart, and counters apart', async () => {
    const rule = { windowMs: 60_000, limit: 1, blockMs: 0 };
    const [once, other] = [counters.counter(rule), counters.counter(rule)];
    await once.hit('a');
    await expect(once.hit('b')).resolves.toMatchObject({
      hits: 1,
      blockedMs: 0,
    });
    await expect(other.hit('a')).resolves.toMatchObject({
      hits: 1,
      blockedMs: 0,
    });
  });

  it('drops a key when its window or its block is over, so what it holds stays bounded', async () => {
    const short = counters.counter({ windowMs: 1000, limit: 5, blockMs: 0 });
    const guesses = counters.counter({
      windowMs: 1000,
      limit: 1,
      blockMs: 60_000,
    });
    const long = counters.counter({ windowMs: 60_000, limit: 5, blockMs: 0 });
    await short.hit('window');
    await guesses.hit('blocked');
    await guesses.hit('blocked');
    await long.hit('long');
    expect(counters.keys().sort()).toEqual(['blocked', 'long', 'window']);
    jest.advanceTimersByTime(1000);
    expect(counters.keys().sort()).toEqual(['blocked', 'long']);
    jest.advanceTimersByTime(59_000);
    expect(counters.keys()).toEqual([]);
  });
});
