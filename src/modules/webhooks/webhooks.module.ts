import { ConfigModule } from '@nestjs/config';
import { Module } from '@nestjs/common';
import { RetentionService } from './retention.service';
import { SqlDeliveryStore } from './sql-delivery-store';
import { WebhookDispatcher } from './webhook-dispatcher.service';
import { WebhookLagWatch } from './webhook-lag';
import { WebhookMetricsService } from './webhook-metrics.service';
import { WebhookSender } from './webhook-sender';
import { WebhookSubscriptionsModule } from './webhook-subscriptions.module';
import { webhooksConfig } from './webhooks.config';

/**
 * Webhooks: subscriptions over HTTP, the dispatcher that sends what the outbox holds, the
 * retention that keeps the outbox and the delivery history bounded, and the watch that logs a
 * subscription falling behind.
 */
@Module({
  imports: [
    ConfigModule.forFeature(webhooksConfig),
    WebhookSubscriptionsModule,
  ],
  providers: [
    WebhookSender,
    SqlDeliveryStore,
    WebhookDispatcher,
    RetentionService,
    WebhookMetricsService,
    WebhookLagWatch,
  ],
})
export class WebhooksModule {}
