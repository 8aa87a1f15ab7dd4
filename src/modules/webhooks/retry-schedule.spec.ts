import { nextAttemptAt } from './retry-schedule';

const config = {
  retryBaseMs: 1000,
  retryMaxDelayMs: 60_000,
  retryWindowMs: 3_600_000,
};
const createdAt = new Date('2026-11-26T00:00:00Z');

function delayAfter(attempts: number, random: number): number | undefined {
  const next = nextAttemptAt(
    attempts,
    createdAt,
    createdAt,
    config,
    () => random,
  );
  return next && next.getTime() - createdAt.getTime();
}

describe('nextAttemptAt', () => {
  it('doubles the delay after each failed attempt', () => {
    expect([1, 2, 3, 4].map((attempts) => delayAfter(attempts, 1))).toEqual([
      1000, 2000, 4000, 8000,
    ]);
  });

  it('jitters between half and all of the delay', () => {
    expect(delayAfter(3, 0)).toBe(2000);
    expect(delayAfter(3, 0.5)).toBe(3000);
  });

  it('caps the delay', () => {
    expect(delayAfter(30, 1)).toBe(60_000);
    expect(delayAfter(1000, 1)).toBe(60_000);
  });

  it('gives up once the next try would fall outside the retry window', () => {
    const late = new Date(createdAt.getTime() + 3_599_500);
    expect(nextAttemptAt(5, createdAt, late, config, () => 1)).toBeUndefined();
    const early = new Date(createdAt.getTime() + 1000);
    expect(nextAttemptAt(5, createdAt, early, config, () => 1)).toBeInstanceOf(
      Date,
    );
  });

  it('still tries at the very end of the window', () => {
    // attempt 5 waits 16 s: due exactly when the window closes
    const now = new Date(createdAt.getTime() + 3_600_000 - 16_000);
    expect(nextAttemptAt(5, createdAt, now, config, () => 1)).toEqual(
      new Date(createdAt.getTime() + 3_600_000),
    );
  });
});
