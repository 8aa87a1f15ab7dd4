import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { EventsModule } from '../events/events.module';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookSubscription } from './webhook-subscription.entity';
import { WebhookSubscriptionsController } from './webhook-subscriptions.controller';
import { WebhookSubscriptionsService } from './webhook-subscriptions.service';

/**
 * Webhook subscriptions and their delivery records: the HTTP API, and the service the
 * command-line tool uses too (an application context serves no controllers).
 */
@Module({
  imports: [
    TypeOrmModule.forFeature([WebhookSubscription, WebhookDelivery]),
    EventsModule,
  ],
  controllers: [WebhookSubscriptionsController],
  providers: [WebhookSubscriptionsService],
  exports: [WebhookSubscriptionsService, TypeOrmModule, EventsModule],
})
export class WebhookSubscriptionsModule {}
