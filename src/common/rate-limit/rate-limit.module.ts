import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { appConfig, type AppConfig } from '../../config/app.config';
import { RateLimitGuard } from './rate-limit.guard';

/**
 * Request rate limits, per token and per client address (RateLimitGuard), kept in the
 * throttler's in-memory storage, which BearerGuard also uses to count rejected tokens.
 */
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [appConfig.KEY],
      useFactory: (config: AppConfig) => ({
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
  providers: [{ provide: APP_GUARD, useClass: RateLimitGuard }],
})
export class RateLimitModule {}
