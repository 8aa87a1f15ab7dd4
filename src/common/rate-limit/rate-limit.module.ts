import { Module } from '@nestjs/common';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { ThrottlerModule } from '@nestjs/throttler';
import { appConfig, type AppConfig } from '../../config/app.config';
import { FixedWindowStorage } from './fixed-window.storage';
import { RateLimitGuard } from './rate-limit.guard';

/**
 * Request rate limits, per token and per client address (RateLimitGuard, installed as the
 * first global guard in app.module.ts), kept in the throttler's storage (Redis when REDIS_URL
 * is set, fixed windows in memory otherwise), which BearerGuard also uses to count rejected
 * tokens.
 */
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [appConfig.KEY],
      useFactory: (config: AppConfig) => ({
        // shared by every instance when REDIS_URL is set; commands fail fast while Redis is
        // away, and the guards then let requests through rather than fail them
        storage: config.rateLimit.redisUrl
          ? new ThrottlerStorageRedisService(config.rateLimit.redisUrl, {
              maxRetriesPerRequest: 1,
              enableOfflineQueue: false,
            })
          : new FixedWindowStorage(),
        // the module insists on a throttler; RateLimitGuard reads its limits from AppConfig
        throttlers: [
          {
            name: 'requests',
            ttl: config.rateLimit.windowMs,
            limit: config.rateLimit.perToken,
          },
        ],
      }),
    }),
  ],
  providers: [RateLimitGuard],
  exports: [RateLimitGuard],
})
export class RateLimitModule {}
