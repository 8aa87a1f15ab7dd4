import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { AuthModule } from './auth/auth.module';
import { BackupsModule } from './backups/backups.module';
import { oidcConfig } from './auth/oidc/oidc.config';
import { BearerGuard } from './auth/bearer.guard';
import { AllExceptionsFilter } from './common/filters/all-exceptions.filter';
import { ShutdownModule } from './http/shutdown.module';
import { JsonBodyGuard } from './common/json/json-body.guard';
import { AppValidationPipe } from './common/validation/app-validation.pipe';
import { KnownQueryGuard } from './common/validation/known-query.guard';
import { appConfig } from './config/app.config';
import { databaseConfig } from './config/database.config';
import { webhooksConfig } from './config/webhooks.config';
import { DatabaseModule } from './database/database.module';
import { EventHandlersModule } from './events/event-handlers.module';
import { HealthModule } from './health/health.module';
import { IdempotencyModule } from './idempotency/idempotency.module';
import { JobsModule } from './jobs/jobs.module';
import { MetricsModule } from './metrics/metrics.module';
import { PlantsModule } from './plants/plants.module';
import { WebhooksModule } from './webhooks/webhooks.module';

@Module({
  imports: [
    ConfigModule.forRoot({
      isGlobal: true,
      ignoreEnvFile: true,
      load: [appConfig, databaseConfig, webhooksConfig, oidcConfig],
    }),
    ShutdownModule,
    MetricsModule,
    DatabaseModule,
    AuthModule,
    IdempotencyModule,
    JobsModule,
    EventHandlersModule,
    BackupsModule,
    // feature modules
    PlantsModule,
    HealthModule,
    WebhooksModule,
  ],
  providers: [
    // Rate limits and token proof come before routing (RequestAdmission, in setup-app.ts).
    // Global guards run in the order listed: each route's access rule, then its query
    // parameters, and only then is a body read (test/rate-limit.e2e-spec.ts holds the order).
    { provide: APP_GUARD, useExisting: BearerGuard },
    { provide: APP_GUARD, useClass: KnownQueryGuard },
    { provide: APP_GUARD, useClass: JsonBodyGuard },
    { provide: APP_FILTER, useClass: AllExceptionsFilter },
    { provide: APP_PIPE, useClass: AppValidationPipe },
  ],
})
export class AppModule {}
