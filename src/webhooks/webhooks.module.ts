import { Module } from '@nestjs/common';
import { WebhookDispatcher } from './webhook-dispatcher.service';
import { WebhookSender } from './webhook-sender';
import { WebhookSubscriptionsModule } from './webhook-subscriptions.module';

/** Webhooks: subscriptions over HTTP, and the dispatcher that sends what the outbox holds. */
@Module({
  imports: [WebhookSubscriptionsModule],
  providers: [WebhookSender, WebhookDispatcher],
})
export class WebhooksModule {}
