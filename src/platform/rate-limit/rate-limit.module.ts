import { Module } from '@nestjs/common';
import { appConfig, type AppConfig } from '../config/app.config';
import { Metrics } from '../metrics/metrics';
import { MemoryCounters } from './memory-counters';
import { RateLimitCounters } from './rate-limit-counters';
import { RateLimiter } from './rate-limiter';
import { RedisCounters } from './redis-counters';

/**
 * Rate limits (RateLimiter), counted in Redis when REDIS_URL is set, so that every instance
 * shares them, and in memory otherwise. BearerGuard's `admit` applies them to every request.
 */
@Module({
  providers: [
    {
      provide: RateLimitCounters,
      inject: [appConfig.KEY, Metrics],
      useFactory: (
        { rateLimit }: AppConfig,
        metrics: Metrics,
      ): RateLimitCounters =>
        rateLimit.redisUrl
          ? new RedisCounters(
              {
                url: rateLimit.redisUrl,
                keyPrefix: rateLimit.redisKeyPrefix,
                timeoutMs: rateLimit.redisTimeoutMs,
              },
              metrics,
            )
          : new MemoryCounters(),
    },
    RateLimiter,
  ],
  exports: [RateLimiter],
})
export class RateLimitModule {}
