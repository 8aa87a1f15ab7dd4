import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { AuthModule } from './auth/auth.module';
import { BearerGuard } from './auth/bearer.guard';
import { AllExceptionsFilter } from './common/filters/all-exceptions.filter';
import { ShutdownGate } from './common/http/shutdown-gate';
import { RateLimitGuard } from './common/rate-limit/rate-limit.guard';
import { RateLimitModule } from './common/rate-limit/rate-limit.module';
import { AppValidationPipe } from './common/validation/app-validation.pipe';
import { appConfig } from './config/app.config';
import { databaseConfig } from './config/database.config';
import { webhooksConfig } from './config/webhooks.config';
import { DatabaseModule } from './database/database.module';
import { HealthModule } from './health/health.module';
import { PlantsModule } from './plants/plants.module';
import { WebhooksModule } from './webhooks/webhooks.module';

@Module({
  imports: [
    ConfigModule.forRoot({
      isGlobal: true,
      ignoreEnvFile: true,
      load: [appConfig, databaseConfig, webhooksConfig],
    }),
    DatabaseModule,
    RateLimitModule,
    AuthModule,
    // feature modules
    PlantsModule,
    HealthModule,
    WebhooksModule,
  ],
  providers: [
    // Global guards run in the order they are listed. The rate limit comes first, so that a
    // flood, with tokens or without, is turned away before it reaches the token store; a test
    // (test/rate-limit.e2e-spec.ts) holds the order.
    { provide: APP_GUARD, useExisting: RateLimitGuard },
    { provide: APP_GUARD, useExisting: BearerGuard },
    { provide: APP_FILTER, useClass: AllExceptionsFilter },
    { provide: APP_PIPE, useClass: AppValidationPipe },
    ShutdownGate,
  ],
})
export class AppModule {}
