import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { setMaxListeners } from 'node:events';
import { InjectRepository } from '@nestjs/typeorm';
import {
  Brackets,
  In,
  IsNull,
  Repository,
  type SelectQueryBuilder,
} from 'typeorm';
import {
  parseLosslessJson,
  stringifyLosslessJson,
} from '../common/json/lossless-json';
import { webhooksConfig, type WebhooksConfig } from '../config/webhooks.config';
import { DatabaseAvailability } from '../database/database-availability';
import {
  isDatabaseBusy,
  isDatabaseUnavailable,
} from '../database/database-errors';
import { OutboxEvent } from '../events/outbox-event.entity';
import { Metrics } from '../metrics/metrics';
import { traced } from '../tracing/tracing';
import { nextAttemptAt } from './retry-schedule';
import { DeliveryClaims } from './delivery-claims';
import { OWED_BATCH, OwedEvents } from './owed-events';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookSender, type AttemptOutcome } from './webhook-sender';
import { WebhookSubscription } from './webhook-subscription.entity';

/**
 * How long past its timeout a claimed attempt may still be recording its outcome. A claim left
 * by an instance that died is free again after timeout + margin.
 */
const CLAIM_MARGIN_MS = 2_000;

/** In a random order, so that no subscription is always served first. */
function shuffled<T>(items: T[]): T[] {
  for (let i = items.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [items[i], items[j]] = [items[j], items[i]];
  }
  return items;
}

/**
 * The body of a delivery: the event's payload written out in the service's own JSON, integers
 * exact and absent fields left out, whatever spacing or escapes the database wrote it with.
 */
export function deliveryBody({ payload }: OutboxEvent): string {
  return stringifyLosslessJson(parseLosslessJson(payload));
}

/**
 * The poll's query for one subscription: its oldest due and unclaimed deliveries, at most
 * `limit`. It reads the partial index of pending rows (IDX_webhook_deliveries_due), so it
 * costs the same with a million delivered rows as with none (test/delivery-poll.slow-spec.ts).
 */
export function dueDeliveriesOf(
  deliveries: Repository<WebhookDelivery>,
  subscriptionId: string,
  now: Date,
  limit: number,
): SelectQueryBuilder<WebhookDelivery> {
  return deliveries
    .createQueryBuilder('delivery')
    .where('delivery.subscription_id = :id', { id: subscriptionId })
    .andWhere("delivery.status = 'pending'")
    .andWhere('delivery.next_attempt_at <= :now', { now })
    .andWhere(
      new Brackets((claim) =>
        claim
          .where('delivery.claimed_until IS NULL')
          .orWhere('delivery.claimed_until < :now', { now }),
      ),
    )
    .orderBy('delivery.next_attempt_at', 'ASC')
    .limit(limit);
}

/**
 * Sends the pending deliveries of the outbox's events: polls for due rows, sends each (same
 * webhook-id on every attempt), records the outcome and schedules retries. At-least-once: an
 * attempt cut short by shutdown or a crash leaves its row pending, to be sent again.
 *
 * At most `maxInFlight` attempts run at once, and at most `maxInFlightPerSubscription` of them
 * for one subscription, so a slow receiver holds its own share and no more. While a poll finds
 * more due rows than free slots, every finished attempt polls again at once rather than after
 * the poll interval: a backlog drains at the receivers' pace.
 */
@Injectable()
export class WebhookDispatcher
  implements OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly logger = new Logger(WebhookDispatcher.name);
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Attempts running per subscription id. */
  private readonly inFlightBySubscription = new Map<string, number>();
  private readonly shutdown = new AbortController();
  private timer?: NodeJS.Timeout;
  private polling = false;
  /** A slot freed while a poll ran: poll again as soon as it ends. */
  private pollAgain = false;
  /** The last poll found at least as many due rows as it could take. */
  private backlog = false;

  constructor(
    @InjectRepository(WebhookDelivery)
    private readonly deliveries: Repository<WebhookDelivery>,
    @InjectRepository(WebhookSubscription)
    private readonly subscriptions: Repository<WebhookSubscription>,
    @InjectRepository(OutboxEvent)
    private readonly events: Repository<OutboxEvent>,
    private readonly sender: WebhookSender,
    private readonly claims: DeliveryClaims,
    private readonly owed: OwedEvents,
    private readonly database: DatabaseAvailability,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
    private readonly metrics: Metrics,
  ) {}

  onApplicationBootstrap(): void {
    // every attempt in flight listens for shutdown on this one signal
    setMaxListeners(this.config.maxInFlight + 1, this.shutdown.signal);
    this.schedulePoll(0);
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearTimeout(this.timer);
    this.shutdown.abort();
    await Promise.allSettled(this.inFlight.values());
  }

  private schedulePoll(delayMs: number): void {
    if (this.shutdown.signal.aborted) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.poll(), delayMs);
  }

  private async poll(): Promise<void> {
    if (this.shutdown.signal.aborted) return;
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = true;
    this.pollAgain = false;
    try {
      await this.startDueAttempts();
      this.database.cameBack();
    } catch (error) {
      if (this.shutdown.signal.aborted) {
        // the database may close first; nothing is lost, rows stay pending
      } else if (isDatabaseUnavailable(error)) {
        this.database.wentAway(error);
      } else if (isDatabaseBusy(error)) {
        // the requests' turn: the rows stay pending for the next poll
        this.logger.debug(`webhook poll deferred: ${(error as Error).message}`);
      } else {
        this.logger.error(error, 'could not read pending webhook deliveries');
      }
    } finally {
      this.polling = false;
      this.schedulePoll(
        this.pollAgain && this.backlog ? 0 : this.config.pollIntervalMs,
      );
    }
  }

  private async startDueAttempts(): Promise<void> {
    const free = this.freeSlots();
    if (free <= 0) return;
    const { due, subscriptionById } = await this.dueDeliveries(
      free,
      new Date(),
    );
    const waiting = due.filter((delivery) => !this.inFlight.has(delivery.id));
    if (waiting.length === 0) return;
    const events = await this.events.findBy({
      id: In(waiting.map((delivery) => delivery.eventId)),
    });
    const eventById = new Map(events.map((e) => [e.id, e]));

    // no other poll runs meanwhile (this.polling): what is claimed here is started at once. The
    // claim runs from when it is taken, not from when the poll began: on a loaded database the
    // poll's queries can take longer than a claim's margin, and a claim dated from before them
    // would be too short to send, poll after poll. A claim whose attempt never starts (an
    // error on the way) expires in the database
    const now = new Date();
    const claimedUntil = new Date(
      now.getTime() + this.config.timeoutMs + CLAIM_MARGIN_MS,
    );
    const claimed = await this.claims.claim(waiting, now, claimedUntil);
    for (const delivery of waiting) {
      if (!claimed.has(delivery.id)) continue;
      delivery.claimedUntil = claimedUntil;
      this.track(delivery, +1);
      const attempt = this.attempt(
        delivery,
        subscriptionById.get(delivery.subscriptionId),
        eventById.get(delivery.eventId),
      ).finally(() => {
        this.release(delivery);
        if (this.backlog && this.freeSlots() >= this.refillBatch()) {
          void this.poll();
        }
      });
      this.inFlight.set(delivery.id, attempt);
    }
  }

  /**
   * Up to `free` due deliveries, taken subscription by subscription so that each receiver gets
   * its share of the free slots: a subscription with a backlog or a slow receiver cannot hold
   * back the others' fresh events, and its share stops at maxInFlightPerSubscription.
   */
  private async dueDeliveries(
    free: number,
    now: Date,
  ): Promise<{
    due: WebhookDelivery[];
    subscriptionById: Map<string, WebhookSubscription>;
  }> {
    const subscriptions = await this.subscriptions.findBy({
      removedAt: IsNull(),
    });
    await this.payOwedEvents(subscriptions, now);
    const open = shuffled(
      subscriptions
        .filter(({ pausedUntil }) => !pausedUntil || pausedUntil <= now)
        .map(({ id, consecutiveFailures }) => ({
          id,
          room:
            // a paused receiver is probed by one attempt at a time until one succeeds
            (consecutiveFailures >= this.config.failuresBeforePause
              ? 1
              : this.config.maxInFlightPerSubscription) -
            (this.inFlightBySubscription.get(id) ?? 0),
        }))
        .filter(({ room }) => room > 0),
    );
    const due: WebhookDelivery[] = [];
    let more = false;
    for (const [index, { id, room }] of open.entries()) {
      const share = Math.ceil((free - due.length) / (open.length - index));
      if (share <= 0) break;
      const limit = Math.min(share, room);
      const taken = await dueDeliveriesOf(
        this.deliveries,
        id,
        now,
        limit,
      ).getMany();
      due.push(...taken);
      // a subscription that filled its share may have more waiting
      if (taken.length === limit) more = true;
    }
    this.backlog = more;
    return {
      due,
      subscriptionById: new Map(subscriptions.map((s) => [s.id, s])),
    };
  }

  /**
   * A receiver that answers again gets the events it was owed while paused, a batch a poll, as
   * deliveries that are due at once; a receiver still paused gets one to be probed with, if it
   * has no pending delivery left.
   */
  private async payOwedEvents(
    subscriptions: WebhookSubscription[],
    now: Date,
  ): Promise<void> {
    for (const subscription of subscriptions) {
      if (!subscription.owedSince) continue;
      const { id, consecutiveFailures, pausedUntil } = subscription;
      try {
        if (consecutiveFailures < this.config.failuresBeforePause) {
          if ((await this.owed.deliverBatch(id)) < OWED_BATCH) {
            await this.owed.settle(id);
            subscription.owedSince = null;
          }
        } else if (!pausedUntil || pausedUntil <= now) {
          await this.owed.deliverProbe(id);
        }
      } catch (error) {
        // a database that is away or busy ends the poll; anything else holds back this one
        // subscription
        if (isDatabaseUnavailable(error) || isDatabaseBusy(error)) throw error;
        this.logger.error(
          error,
          `webhook subscription ${id}: could not make the deliveries of the events owed to it; trying again at the next poll`,
        );
      }
    }
  }

  private freeSlots(): number {
    return this.config.maxInFlight - this.inFlight.size;
  }

  /** Under a backlog, a poll waits for this many free slots: one query fills them all. */
  private refillBatch(): number {
    return Math.max(1, Math.floor(this.config.maxInFlight / 8));
  }

  private track(delivery: WebhookDelivery, change: 1 | -1): void {
    const count =
      (this.inFlightBySubscription.get(delivery.subscriptionId) ?? 0) + change;
    if (count > 0) {
      this.inFlightBySubscription.set(delivery.subscriptionId, count);
    } else {
      this.inFlightBySubscription.delete(delivery.subscriptionId);
    }
  }

  private release(delivery: WebhookDelivery): void {
    if (this.inFlight.delete(delivery.id)) this.track(delivery, -1);
  }

  /**
   * Whether the claim still covers a whole attempt: a process frozen (or starved) between its
   * claim and its send must not send once another instance may have taken the delivery over.
   */
  private stillClaimed(delivery: WebhookDelivery): boolean {
    return (
      delivery.claimedUntil !== null &&
      delivery.claimedUntil.getTime() - Date.now() >= this.config.timeoutMs
    );
  }

  private async attempt(
    delivery: WebhookDelivery,
    subscription: WebhookSubscription | undefined,
    event: OutboxEvent | undefined,
  ): Promise<void> {
    try {
      if (!subscription || subscription.removedAt !== null || !event) {
        await this.deliveries.update(
          { id: delivery.id, status: 'pending' },
          { status: 'cancelled' },
        );
        return;
      }
      if (!this.stillClaimed(delivery)) {
        // the claim runs out before the attempt could: leave it to whoever claims it next
        this.logger.debug(
          `webhook delivery ${delivery.id}: claim expired before sending; not sent`,
        );
        return;
      }
      // with tracing on, the attempt's span is the parent of the request it sends, whose
      // traceparent header the receiver gets
      const outcome = await traced(
        'webhook attempt',
        {
          'webhook.id': delivery.id,
          'webhook.event_type': event.type,
          'webhook.subscription_id': subscription.id,
          'webhook.attempt': delivery.attempts + 1,
        },
        async (span) => {
          const sent = await this.sender.send(
            {
              url: subscription.url,
              secret: subscription.secret,
              id: delivery.id,
              type: event.type,
              body: deliveryBody(event),
            },
            this.shutdown.signal,
          );
          span?.setAttribute('webhook.result', sent.result);
          return sent;
        },
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
      await this.followReceiver(subscription, outcome);
    } catch (error) {
      if (this.shutdown.signal.aborted) return;
      if (isDatabaseBusy(error)) {
        // its claim runs out and the delivery is attempted again: at least once
        this.logger.warn(
          `webhook delivery ${delivery.id}: the database was too busy to record the attempt (${(error as Error).message}); it will be attempted again`,
        );
      } else {
        this.logger.error(error, `webhook delivery ${delivery.id} failed`);
      }
    }
  }

  private async record(
    delivery: WebhookDelivery,
    outcome: AttemptOutcome,
  ): Promise<void> {
    this.metrics.webhookAttempts.inc({ result: outcome.result });
    const now = new Date();
    const attempts = delivery.attempts + 1;
    const retryAt =
      outcome.delivered || outcome.refused
        ? undefined
        : nextAttemptAt(attempts, delivery.createdAt, now, this.config);
    const { affected } = await this.deliveries.update(
      { id: delivery.id, status: 'pending' },
      {
        // counted in the database, so that two instances' attempts at one row (a claim that
        // ran out under a frozen instance) both count, whichever records first
        attempts: () => 'attempts + 1',
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
    if (!affected) {
      // another instance settled it meanwhile (this one's claim ran out mid-attempt): the
      // attempt was made all the same, and counts
      await this.deliveries.increment({ id: delivery.id }, 'attempts', 1);
    } else if (outcome.delivered || !retryAt) {
      this.metrics.webhookDeliveries.inc({
        outcome: outcome.delivered ? 'delivered' : 'failed',
      });
    }
    if (!outcome.delivered) {
      // each failed attempt is in the delivery's lastError; the log says when one is given up,
      // and when a receiver is paused or resumed (followReceiver)
      const line =
        `webhook delivery ${delivery.id} attempt ${attempts} failed: ${outcome.error}` +
        (retryAt ? `; next try at ${retryAt.toISOString()}` : '; giving up');
      if (retryAt) this.logger.debug(line);
      else this.logger.warn(line);
    }
  }

  /**
   * A receiver that fails failuresBeforePause attempts in a row, across deliveries, is paused
   * for pauseMs, then probed by one attempt; each failed probe doubles the pause, up to
   * retryMaxDelayMs (or pauseMs, if longer). A success resumes it. The count is kept in the
   * database, so that every instance sees the same receiver as the same.
   */
  private async followReceiver(
    subscription: WebhookSubscription,
    outcome: AttemptOutcome,
  ): Promise<void> {
    const threshold = this.config.failuresBeforePause;
    const id = subscription.id;
    if (outcome.delivered) {
      if (!subscription.consecutiveFailures) return;
      const { affected } = await this.subscriptions.update(
        { id, removedAt: IsNull() },
        { consecutiveFailures: 0, pausedUntil: null },
      );
      if (affected && subscription.consecutiveFailures >= threshold) {
        this.logger.warn(
          `webhook subscription ${id} resumed: its receiver answered again after ${subscription.consecutiveFailures} failed attempts`,
        );
      }
      subscription.consecutiveFailures = 0;
      return;
    }
    await this.subscriptions.increment(
      { id, removedAt: IsNull() },
      'consecutiveFailures',
      1,
    );
    const current = await this.subscriptions.findOneBy({ id });
    if (!current || current.consecutiveFailures < threshold) return;
    const probes = current.consecutiveFailures - threshold;
    const pauseMs = Math.min(
      this.config.pauseMs * 2 ** Math.min(probes, 30),
      Math.max(this.config.pauseMs, this.config.retryMaxDelayMs),
    );
    const pausedAt = new Date();
    const pausedUntil = new Date(pausedAt.getTime() + pauseMs);
    // from now on its events are owed, not fanned out into rows that wait (owed-events.ts)
    await this.owed.owe(id, pausedAt);
    await this.subscriptions.update({ id }, { pausedUntil });
    subscription.consecutiveFailures = current.consecutiveFailures;
    if (probes === 0) {
      this.logger.warn(
        `webhook subscription ${id} paused until ${pausedUntil.toISOString()}: its receiver failed ${threshold} attempts in a row (last: ${outcome.error}); then one attempt probes it`,
      );
    }
  }
}
