import { BadRequestException, Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, Repository } from 'typeorm';
import { webhooksConfig, type WebhooksConfig } from '../config/webhooks.config';
import { describeUrlProblem } from './outbound-target';
import { WebhookDelivery } from './webhook-delivery.entity';
import { createSigningSecret } from './webhook-signature';
import { WebhookSubscription } from './webhook-subscription.entity';

/** The operator's side of webhooks: subscriptions and the record of their deliveries. */
@Injectable()
export class WebhookSubscriptionsService {
  constructor(
    @InjectRepository(WebhookSubscription)
    private readonly subscriptions: Repository<WebhookSubscription>,
    @InjectRepository(WebhookDelivery)
    private readonly deliveries: Repository<WebhookDelivery>,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
  ) {}

  /** Subscribes a URL to plant-added events; the returned secret is shown this once. */
  async add(url: string): Promise<WebhookSubscription> {
    const problem = describeUrlProblem(url, this.config.allowPrivateNetworks);
    if (problem) throw new BadRequestException(problem);
    const subscription = this.subscriptions.create({
      id: randomUUID(),
      url,
      secret: createSigningSecret(),
      removedAt: null,
    });
    await this.subscriptions.insert(subscription);
    return this.subscriptions.findOneByOrFail({ id: subscription.id });
  }

  listActive(): Promise<WebhookSubscription[]> {
    return this.subscriptions.find({
      where: { removedAt: IsNull() },
      order: { createdAt: 'ASC' },
    });
  }

  /** Stops a subscription and cancels what it still had pending. */
  async remove(id: string): Promise<boolean> {
    const { affected } = await this.subscriptions.update(
      { id, removedAt: IsNull() },
      { removedAt: new Date() },
    );
    if (!affected) return false;
    await this.deliveries.update(
      { subscriptionId: id, status: 'pending' },
      { status: 'cancelled' },
    );
    return true;
  }

  recentDeliveries(limit: number): Promise<WebhookDelivery[]> {
    return this.deliveries.find({
      order: { createdAt: 'DESC', id: 'ASC' },
      take: limit,
    });
  }
}
