import {
  RateLimiterRes,
  type IRateLimiterOptions,
  type RateLimiterAbstract,
} from 'rate-limiter-flexible';

/**
 * One rule of a counter: at most `limit` hits per window of `windowMs`. Both times are whole
 * seconds, which is what rate-limiter-flexible's Redis store keeps (the settings say so).
 */
export interface CounterRule {
  windowMs: number;
  limit: number;
  /** How long a key stays blocked once it passes its limit; 0 blocks it to the window's end. */
  blockMs: number;
}

export interface Count {
  hits: number;
  /** Time left in the key's window, or in its block. */
  resetMs: number;
  /** Time left in the key's block; 0 when it is not blocked. */
  blockedMs: number;
}

/** The hits of one rule's keys. */
export interface Counter {
  /** The hits a key may have in a window. */
  readonly limit: number;
  /** Counts one hit on `key`; past the rule's limit the key is blocked. */
  hit(key: string): Promise<Count>;
  /** How long `key` stays blocked, without counting a hit; 0 when it is not. */
  blockedFor(key: string): Promise<number>;
}

/**
 * Where rate-limit counters live: rate-limiter-flexible's limiters, in memory for one instance
 * (MemoryCounters) or in Redis for several (RedisCounters), one limiter per rule. A window
 * starts at a key's first hit, so where it ends depends on the key, never on the clock.
 */
export abstract class RateLimitCounters {
  private readonly limiters: RateLimiterAbstract[] = [];

  /** A counter of `rule`, made once for the life of the service: its keys' hits and blocks. */
  counter(rule: CounterRule): Counter {
    const limiter = this.makeLimiter({
      keyPrefix: '',
      points: rule.limit,
      duration: rule.windowMs / 1000,
      blockDuration: rule.blockMs / 1000,
    });
    this.limiters.push(limiter);
    return {
      limit: rule.limit,
      hit: async (key) =>
        countOf(
          await this.ask(() =>
            limiter.consume(this.storeKey(key)).catch(overTheLimit),
          ),
          rule,
        ),
      blockedFor: async (key) => {
        const answer = await this.ask(() => limiter.get(this.storeKey(key)));
        return answer ? countOf(answer, rule).blockedMs : 0;
      },
    };
  }

  protected abstract makeLimiter(
    options: IRateLimiterOptions,
  ): RateLimiterAbstract;

  /** Sends one command to the store; RedisCounters puts its timeout and breaker around it. */
  protected ask<T>(command: () => Promise<T>): Promise<T> {
    return command();
  }

  /** The name `key` is kept under in the store. */
  protected storeKey(key: string): string {
    return key;
  }

  protected get allLimiters(): readonly RateLimiterAbstract[] {
    return this.limiters;
  }
}

/** rate-limiter-flexible rejects a hit over the limit with its count: an answer, not a failure. */
function overTheLimit(rejection: unknown): RateLimiterRes {
  if (rejection instanceof RateLimiterRes) return rejection;
  throw rejection;
}

function countOf(
  { consumedPoints, msBeforeNext }: RateLimiterRes,
  { limit }: CounterRule,
): Count {
  const resetMs = Math.max(0, msBeforeNext);
  return {
    hits: consumedPoints,
    resetMs,
    blockedMs: consumedPoints > limit ? resetMs : 0,
  };
}
