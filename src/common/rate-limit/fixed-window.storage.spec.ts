import { FixedWindowStorage } from './fixed-window.storage';

describe('FixedWindowStorage', () => {
  let storage: FixedWindowStorage;

  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-11-26T00:00:00Z') });
    storage = new FixedWindowStorage();
  });

  afterEach(() => {
    storage.onModuleDestroy();
    jest.useRealTimers();
  });

  it('counts hits in a window and blocks past the limit until the window ends', async () => {
    for (let hit = 1; hit <= 3; hit += 1) {
      await expect(
        storage.increment('k', 60_000, 3, 0, 'requests'),
      ).resolves.toEqual({
        totalHits: hit,
        timeToExpire: 60,
        isBlocked: false,
        timeToBlockExpire: 0,
      });
    }
    await expect(
      storage.increment('k', 60_000, 3, 0, 'requests'),
    ).resolves.toMatchObject({
      isBlocked: true,
      timeToBlockExpire: 60,
    });
    jest.advanceTimersByTime(60_000);
    await expect(
      storage.increment('k', 60_000, 3, 0, 'requests'),
    ).resolves.toMatchObject({
      totalHits: 1,
      isBlocked: false,
    });
  });

  it('keeps a key blocked for the block duration, beyond its window', async () => {
    await storage.increment('k', 1000, 1, 0, 'x');
    await expect(
      storage.increment('k', 1000, 1, 900_000, 'x'),
    ).resolves.toMatchObject({
      isBlocked: true,
      timeToBlockExpire: 900,
    });
    jest.advanceTimersByTime(5000);
    await expect(
      storage.increment('k', 1000, 1, 900_000, 'x'),
    ).resolves.toMatchObject({
      isBlocked: true,
      timeToBlockExpire: 895,
    });
  });

  it('counts keys apart', async () => {
    await storage.increment('a', 60_000, 1, 0, 'x');
    await expect(
      storage.increment('b', 60_000, 1, 0, 'x'),
    ).resolves.toMatchObject({
      totalHits: 1,
      isBlocked: false,
    });
  });
});
