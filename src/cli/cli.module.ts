import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { TokensModule } from '../auth/tokens.module';
import { databaseConfig } from '../config/database.config';
import { webhooksConfig } from '../config/webhooks.config';
import { DatabaseModule } from '../database/database.module';
import { WebhookSubscriptionsModule } from '../webhooks/webhook-subscriptions.module';

/** What the operator's tool needs: the database, tokens and webhook subscriptions; no HTTP. */
@Module({
  imports: [
    ConfigModule.forRoot({
      isGlobal: true,
      ignoreEnvFile: true,
      load: [databaseConfig, webhooksConfig],
    }),
    DatabaseModule,
    TokensModule,
    WebhookSubscriptionsModule,
  ],
})
export class CliModule {}
