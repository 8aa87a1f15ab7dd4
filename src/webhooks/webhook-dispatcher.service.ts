import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, LessThan, LessThanOrEqual, Repository } from 'typeorm';
import {
  parseLosslessJson,
  stringifyLosslessJson,
} from '../common/json/lossless-json';
import { webhooksConfig, type WebhooksConfig } from '../config/webhooks.config';
import { OutboxEvent } from '../events/outbox-event.entity';
import { nextAttemptAt } from './retry-schedule';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookSender, type AttemptOutcome } from './webhook-sender';
import { WebhookSubscription } from './webhook-subscription.entity';

/** How many deliveries one instance sends at once. */
const CONCURRENT_DELIVERIES = 8;

/**
 * How long past its timeout a claimed attempt may still be recording its outcome. A claim left
 * by an instance that died is free again after timeout + margin.
 */
const CLAIM_MARGIN_MS = 2_000;

/**
 * The body of a delivery: the event's payload written out in the service's own JSON, integers
 * exact and absent fields left out, whatever spacing or escapes the database wrote it with.
 */
export function deliveryBody({ payload }: OutboxEvent): string {
  return stringifyLosslessJson(parseLosslessJson(payload));
}

/**
 * Sends the pending deliveries of the outbox's events: polls for due rows, sends each (same webhook-id on
 * every attempt), records the outcome and schedules retries. At-least-once: an attempt cut
 * short by shutdown or a crash leaves its row pending, to be sent again.
 */
@Injectable()
export class WebhookDispatcher
  implements OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly logger = new Logger(WebhookDispatcher.name);
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly shutdown = new AbortController();
  private timer?: NodeJS.Timeout;

  constructor(
    @InjectRepository(WebhookDelivery)
    private readonly deliveries: Repository<WebhookDelivery>,
    @InjectRepository(WebhookSubscription)
    private readonly subscriptions: Repository<WebhookSubscription>,
    @InjectRepository(OutboxEvent)
    private readonly events: Repository<OutboxEvent>,
    private readonly sender: WebhookSender,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.scheduleTick(0);
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearTimeout(this.timer);
    this.shutdown.abort();
    await Promise.allSettled(this.inFlight.values());
  }

  private scheduleTick(delayMs: number): void {
    if (this.shutdown.signal.aborted) return;
    this.timer = setTimeout(() => void this.tick(), delayMs);
  }

  private async tick(): Promise<void> {
    try {
      const capacity = CONCURRENT_DELIVERIES - this.inFlight.size;
      if (capacity > 0) {
        const now = new Date();
        const due = await this.deliveries.find({
          where: [
            {
              status: 'pending',
              nextAttemptAt: LessThanOrEqual(now),
              claimedUntil: IsNull(),
            },
            {
              status: 'pending',
              nextAttemptAt: LessThanOrEqual(now),
              claimedUntil: LessThan(now),
            },
          ],
          order: { nextAttemptAt: 'ASC' },
          take: capacity + this.inFlight.size,
        });
        for (const delivery of due) {
          if (this.inFlight.size >= CONCURRENT_DELIVERIES) break;
          if (this.inFlight.has(delivery.id)) continue;
          if (!(await this.claim(delivery, now))) continue;
          const attempt = this.attempt(delivery).finally(() =>
            this.inFlight.delete(delivery.id),
          );
          this.inFlight.set(delivery.id, attempt);
        }
      }
    } catch (error) {
      if (!this.shutdown.signal.aborted) {
        this.logger.error(error, 'could not read pending webhook deliveries');
      }
    } finally {
      this.scheduleTick(this.config.pollIntervalMs);
    }
  }

  /**
   * Takes a delivery for this instance until the attempt can no longer be running. Of several
   * instances that saw it due, the database lets one update win; the others skip it.
   */
  private async claim(delivery: WebhookDelivery, now: Date): Promise<boolean> {
    const { affected } = await this.deliveries
      .createQueryBuilder()
      .update()
      .set({
        claimedUntil: new Date(
          now.getTime() + this.config.timeoutMs + CLAIM_MARGIN_MS,
        ),
      })
      .where('id = :id', { id: delivery.id })
      .andWhere("status = 'pending'")
      .andWhere('(claimed_until IS NULL OR claimed_until < :now)', { now })
      .execute();
    return affected === 1;
  }

  private async attempt(delivery: WebhookDelivery): Promise<void> {
    try {
      const subscription = await this.subscriptions.findOneBy({
        id: delivery.subscriptionId,
      });
      const event = await this.events.findOneBy({ id: delivery.eventId });
      if (!subscription || subscription.removedAt !== null || !event) {
        await this.deliveries.update(
          { id: delivery.id, status: 'pending' },
          { status: 'cancelled' },
        );
        return;
      }
      const outcome = await this.sender.send(
        {
          url: subscription.url,
          secret: subscription.secret,
          id: delivery.id,
          type: event.type,
          body: deliveryBody(event),
        },
        this.shutdown.signal,
      );
      // cut short by shutdown: not the receiver's fault; the row stays pending, released for
      // whichever instance comes next
      if (this.shutdown.signal.aborted) {
        await this.deliveries.update(
          { id: delivery.id, status: 'pending' },
          { claimedUntil: null },
        );
        return;
      }
      await this.record(delivery, outcome);
    } catch (error) {
      if (!this.shutdown.signal.aborted) {
        this.logger.error(error, `webhook delivery ${delivery.id} failed`);
      }
    }
  }

  private async record(
    delivery: WebhookDelivery,
    outcome: AttemptOutcome,
  ): Promise<void> {
    const now = new Date();
    const attempts = delivery.attempts + 1;
    const retryAt =
      outcome.delivered || outcome.refused
        ? undefined
        : nextAttemptAt(attempts, delivery.createdAt, now, this.config);
    await this.deliveries.update(
      { id: delivery.id, status: 'pending' },
      {
        attempts,
        lastAttemptAt: now,
        lastStatusCode: outcome.statusCode ?? null,
        lastError: outcome.error ?? null,
        status: outcome.delivered
          ? 'delivered'
          : retryAt
            ? 'pending'
            : 'failed',
        nextAttemptAt: retryAt ?? now,
        claimedUntil: null,
      },
    );
    if (!outcome.delivered) {
      this.logger.warn(
        `webhook delivery ${delivery.id} attempt ${attempts} failed: ${outcome.error}` +
          (retryAt ? `; next try at ${retryAt.toISOString()}` : '; giving up'),
      );
    }
  }
}
