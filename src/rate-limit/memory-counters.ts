import type { OnModuleDestroy } from '@nestjs/common';
import type {
  Count,
  CounterRule,
  RateLimitCounters,
} from './rate-limit-counters';

interface Counter {
  hits: number;
  windowEndsAt: number;
  blockedUntil: number;
}

/** How often counters whose window and block are both over are dropped. */
export const SWEEP_INTERVAL_MS = 10_000;

/**
 * Counters of one instance, O(1) a hit. @nestjs/throttler's memory storage keeps every hit's
 * timestamp and filters them all on each request, so its cost grows with the traffic of the
 * window (figures in bench/README.md).
 */
export class MemoryCounters implements RateLimitCounters, OnModuleDestroy {
  private readonly counters = new Map<string, Counter>();
  private readonly sweeper = setInterval(
    () => this.sweep(),
    SWEEP_INTERVAL_MS,
  ).unref();

  hit(key: string, { windowMs, limit, blockMs }: CounterRule): Promise<Count> {
    const now = Date.now();
    let counter = this.counters.get(key);
    if (!counter || isOver(counter, now)) {
      counter = { hits: 0, windowEndsAt: now + windowMs, blockedUntil: 0 };
      this.counters.set(key, counter);
    }
    if (counter.blockedUntil <= now) {
      counter.hits += 1;
      if (counter.hits > limit) {
        counter.blockedUntil =
          blockMs > 0 ? now + blockMs : counter.windowEndsAt;
      }
    }
    return Promise.resolve({
      hits: counter.hits,
      resetMs: Math.max(0, counter.windowEndsAt - now),
      blockedMs: Math.max(0, counter.blockedUntil - now),
    });
  }

  blockedFor(key: string): Promise<number> {
    const counter = this.counters.get(key);
    return Promise.resolve(
      counter ? Math.max(0, counter.blockedUntil - Date.now()) : 0,
    );
  }

  /** How many keys are held; the sweeper keeps it bounded by the traffic of one window. */
  get size(): number {
    return this.counters.size;
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, counter] of this.counters) {
      if (isOver(counter, now)) this.counters.delete(key);
    }
  }
}

function isOver(counter: Counter, now: number): boolean {
  return counter.windowEndsAt <= now && counter.blockedUntil <= now;
}
