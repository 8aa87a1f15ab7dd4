import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookSubscription } from './webhook-subscription.entity';
import { WebhookSubscriptionsService } from './webhook-subscriptions.service';

/** Subscriptions and their delivery records, for the command-line tool as well as the service. */
@Module({
  imports: [TypeOrmModule.forFeature([WebhookSubscription, WebhookDelivery])],
  providers: [WebhookSubscriptionsService],
  exports: [WebhookSubscriptionsService, TypeOrmModule],
})
export class WebhookSubscriptionsModule {}
