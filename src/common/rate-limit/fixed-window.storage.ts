import type { OnModuleDestroy } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';

interface Counter {
  hits: number;
  windowEndsAt: number;
  blockedUntil: number;
}

type StorageRecord = Awaited<ReturnType<ThrottlerStorage['increment']>>;

/**
 * In-memory rate-limit counters in fixed windows: O(1) a request. @nestjs/throttler's own
 * memory storage keeps every hit's timestamp and filters them all on each request, so its cost
 * grows with the traffic of the window (figures in bench/README.md).
 */
export class FixedWindowStorage implements ThrottlerStorage, OnModuleDestroy {
  private readonly counters = new Map<string, Counter>();
  private readonly sweeper = setInterval(() => this.sweep(), 10_000).unref();

  increment(
    key: string,
    ttl: number,
    limit: number,
    blockDuration: number,
    _throttlerName: string,
  ): Promise<StorageRecord> {
    const now = Date.now();
    let counter = this.counters.get(key);
    if (
      !counter ||
      (counter.windowEndsAt <= now && counter.blockedUntil <= now)
    ) {
      counter = { hits: 0, windowEndsAt: now + ttl, blockedUntil: 0 };
      this.counters.set(key, counter);
    }
    const blocked = counter.blockedUntil > now;
    if (!blocked) {
      counter.hits += 1;
      if (counter.hits > limit) {
        counter.blockedUntil =
          now +
          (blockDuration > 0 ? blockDuration : counter.windowEndsAt - now);
      }
    }
    const isBlocked = counter.blockedUntil > now;
    return Promise.resolve({
      totalHits: counter.hits,
      timeToExpire: Math.max(0, Math.ceil((counter.windowEndsAt - now) / 1000)),
      isBlocked,
      timeToBlockExpire: isBlocked
        ? Math.ceil((counter.blockedUntil - now) / 1000)
        : 0,
    });
  }

  onModuleDestroy(): void {
    clearInterval(this.sweeper);
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, counter] of this.counters) {
      if (counter.windowEndsAt <= now && counter.blockedUntil <= now) {
        this.counters.delete(key);
      }
    }
  }
}
