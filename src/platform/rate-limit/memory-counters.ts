import {
  RateLimiterMemory,
  type IRateLimiterOptions,
} from 'rate-limiter-flexible';
import { RateLimitCounters } from './rate-limit-counters';

/**
 * Counters of one instance. Each key is dropped by a timer of its own when its window or block
 * ends, so what is held is bounded by the traffic of one window.
 */
export class MemoryCounters extends RateLimitCounters {
  /** The keys held, of every rule. */
  keys(): string[] {
    return [...this.allLimiters].flatMap((limiter) =>
      (limiter as RateLimiterMemory)
        .dump()
        .storage.map(({ key }) => String(key)),
    );
  }

  protected makeLimiter(options: IRateLimiterOptions) {
    return new RateLimiterMemory(options);
  }
}
