/** One rule of a counter: at most `limit` hits per fixed window of `windowMs`. */
export interface CounterRule {
  windowMs: number;
  limit: number;
  /** How long a key stays blocked once it passes its limit; 0 blocks it to the window's end. */
  blockMs: number;
}

export interface Count {
  hits: number;
  /** Time left in the key's window. */
  resetMs: number;
  /** Time left in the key's block; 0 when it is not blocked. */
  blockedMs: number;
}

/**
 * Where rate-limit counters live: in memory for one instance, in Redis for several. A window
 * starts at a key's first hit, so where it ends depends on the key, never on the clock.
 */
export abstract class RateLimitCounters {
  /** Counts one hit on `key`; past the rule's limit the key is blocked. */
  abstract hit(key: string, rule: CounterRule): Promise<Count>;

  /** How long `key` stays blocked, without counting a hit; 0 when it is not. */
  abstract blockedFor(key: string): Promise<number>;
}
