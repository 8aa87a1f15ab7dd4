import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { AppModule } from '../app.module';
import { TokensModule } from '../platform/auth/tokens.module';
import { appConfig } from '../platform/config/app.config';
import { databaseConfig } from '../platform/config/database.config';
import { DatabaseModule } from '../platform/database/database.module';
import { SkippedEventsModule } from '../platform/events/skipped-events.module';
import { IdempotencyModule } from '../platform/idempotency/idempotency.module';
import { WebhookSubscriptionsModule } from '../modules/webhooks/webhook-subscriptions.module';
import { ServiceDeclarations } from './service-declarations';

/** The scopes and events of the service's modules, which the CLI takes and shows. */
export const SERVICE_DECLARATIONS = new ServiceDeclarations(AppModule);

/**
 * What the operator's tool needs: the database, tokens, webhook subscriptions and the events
 * handlers skipped, and what the service's modules declare; no HTTP, and none of the modules
 * themselves.
 */
@Module({
  imports: [
    ConfigModule.forRoot({
      isGlobal: true,
      ignoreEnvFile: true,
      load: [appConfig, databaseConfig],
    }),
    DatabaseModule,
    TokensModule,
    // the subscriptions' controller, though never served, is built with its @Idempotent()
    IdempotencyModule,
    WebhookSubscriptionsModule,
    SkippedEventsModule,
    SERVICE_DECLARATIONS.asModule(),
  ],
})
export class CliModule {}
