import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { APP_FILTER, APP_GUARD, APP_PIPE } from '@nestjs/core';
import { AuthModule } from './platform/auth/auth.module';
import { BackupsModule } from './platform/backups/backups.module';
import { oidcConfig } from './platform/auth/oidc/oidc.config';
import { BearerGuard } from './platform/auth/bearer.guard';
import { AllExceptionsFilter } from './platform/common/filters/all-exceptions.filter';
import { ShutdownModule } from './platform/http/shutdown.module';
import { JsonBodyGuard } from './platform/common/json/json-body.guard';
import { AppValidationPipe } from './platform/common/validation/app-validation.pipe';
import { KnownQueryGuard } from './platform/common/validation/known-query.guard';
import { appConfig } from './platform/config/app.config';
import { databaseConfig } from './platform/config/database.config';
import { DatabaseModule } from './platform/database/database.module';
import { EventHandlersModule } from './platform/events/event-handlers.module';
import { HealthModule } from './platform/health/health.module';
import { IdempotencyModule } from './platform/idempotency/idempotency.module';
import { JobsModule } from './platform/jobs/jobs.module';
import { MetricsModule } from './platform/metrics/metrics.module';
import { PlantsModule } from './modules/plants/plants.module';
import { WebhooksModule } from './modules/webhooks/webhooks.module';

@Module({
  imports: [
    ConfigModule.forRoot({
      isGlobal: true,
      ignoreEnvFile: true,
      load: [appConfig, databaseConfig, oidcConfig],
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
    // Rate limits and token proof come before routing (BearerGuard's `admit`, in setup-app.ts).
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
