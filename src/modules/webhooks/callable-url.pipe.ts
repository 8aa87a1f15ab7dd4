import {
  BadRequestException,
  Injectable,
  type PipeTransform,
} from '@nestjs/common';
import type { CreateWebhookSubscriptionDto } from './dto/create-webhook-subscription.dto';
import { WebhookSubscriptionsService } from './webhook-subscriptions.service';

/**
 * Refuses a subscription whose URL the dispatcher would not call, its name resolved here:
 * pipes run before the handler, so before the transaction an Idempotency-Key opens around it
 * (idempotency.runner.ts), which would hold a connection (SQLite's only one) while the name
 * resolves, for up to 2 s.
 */
@Injectable()
export class CallableUrlPipe
  implements PipeTransform<CreateWebhookSubscriptionDto>
{
  constructor(private readonly subscriptions: WebhookSubscriptionsService) {}

  async transform(
    subscription: CreateWebhookSubscriptionDto,
  ): Promise<CreateWebhookSubscriptionDto> {
    const problem = await this.subscriptions.urlProblem(subscription.url);
    if (problem) throw new BadRequestException(problem);
    return subscription;
  }
}
