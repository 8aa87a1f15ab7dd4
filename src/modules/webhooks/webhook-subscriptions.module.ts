import { ConfigModule } from '@nestjs/config';
import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ScopesModule } from '../../platform/auth';
import { EventsModule } from '../../platform/events';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookSubscription } from './webhook-subscription.entity';
import { WebhookSubscriptionsController } from './webhook-subscriptions.controller';
import { WebhookSubscriptionsService } from './webhook-subscriptions.service';
import { WEBHOOK_SCOPES } from './webhook.scopes';
import { webhooksConfig } from './webhooks.config';

/**
 * Webhook subscriptions and their delivery records: the HTTP API, and the service the
 * command-line tool uses too (an application context serves no controllers).
 */
@Module({
  imports: [
    ConfigModule.forFeature(webhooksConfig),
    TypeOrmModule.forFeature([WebhookSubscription, WebhookDelivery]),
    EventsModule,
    ScopesModule.forFeature(WEBHOOK_SCOPES),
  ],
  controllers: [WebhookSubscriptionsController],
  providers: [WebhookSubscriptionsService],
  exports: [WebhookSubscriptionsService, TypeOrmModule, EventsModule],
})
export class WebhookSubscriptionsModule {}
