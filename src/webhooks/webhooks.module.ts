import { Module } from '@nestjs/common';
import { DeliveryClaims } from './delivery-claims';
import { OwedEvents } from './owed-events';
import { RetentionService } from './retention.service';
import { WebhookDispatcher } from './webhook-dispatcher.service';
import { WebhookMetrics } from './webhook-metrics';
import { WebhookSender } from './webhook-sender';
import { WebhookSubscriptionsModule } from './webhook-subscriptions.module';

/**
 * Webhooks: subscriptions over HTTP, the dispatcher that sends what the outbox holds, and the
 * retention that keeps the outbox and the delivery history bounded.
 */
@Module({
  imports: [WebhookSubscriptionsModule],
  providers: [
    WebhookSender,
    DeliveryClaims,
    OwedEvents,
    WebhookDispatcher,
    RetentionService,
    WebhookMetrics,
  ],
})
export class WebhooksModule {}
