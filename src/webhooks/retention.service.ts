import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { setTimeout as sleep } from 'node:timers/promises';
import { In, IsNull, LessThan, Repository, type ObjectLiteral } from 'typeorm';
import { webhooksConfig, type WebhooksConfig } from '../config/webhooks.config';
import {
  isDatabaseBusy,
  isDatabaseUnavailable,
} from '../database/database-errors';
import { OutboxEvent } from '../events/outbox-event.entity';
import type { DeliveryStatus } from './webhook-delivery.entity';
import { WebhookDelivery } from './webhook-delivery.entity';
import { OwedEvents } from './owed-events';

/** Rows one statement deletes: short enough that no lock is held for long. */
export const RETENTION_BATCH = 1000;
/** Between two batches, so that requests get the database in between (SQLite's one connection). */
const BATCH_PAUSE_MS = 20;

export interface Pruned {
  /** Pending deliveries past the retry window, marked failed. */
  givenUp: number;
  /** Paused subscriptions that gave up the events owed to them past the retry window. */
  owedGivenUp: number;
  deliveries: number;
  events: number;
}

/** What a delivery given up by retention says in its lastError. */
export const GIVEN_UP_ERROR =
  'not delivered within the retry window (WEBHOOKS_RETRY_WINDOW): given up';

/**
 * Keeps the outbox and the delivery history bounded (docs/decisions.md, "Retention"): pending
 * deliveries older than the retry window are given up (failed), since no attempt could still
 * be made for them (those of a paused receiver are not attempted), and so are the events owed
 * to a paused subscription from before the window; delivered and cancelled deliveries older
 * than EVENTS_RETENTION, failed ones older than EVENTS_FAILED_RETENTION, then the events no
 * delivery still refers to and older than EVENTS_RETENTION, all in batches of RETENTION_BATCH
 * rows. A pending delivery and its event are never deleted, nor an event still owed to a
 * subscription. Every instance may run it: deleting a row twice deletes it once.
 */
@Injectable()
export class RetentionService
  implements OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly logger = new Logger(RetentionService.name);
  private readonly shutdown = new AbortController();
  private timer?: NodeJS.Timeout;

  constructor(
    @InjectRepository(WebhookDelivery)
    private readonly deliveries: Repository<WebhookDelivery>,
    @InjectRepository(OutboxEvent)
    private readonly events: Repository<OutboxEvent>,
    private readonly owed: OwedEvents,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
  ) {}

  onApplicationBootstrap(): void {
    this.schedule();
  }

  beforeApplicationShutdown(): void {
    clearTimeout(this.timer);
    this.shutdown.abort();
  }

  private schedule(): void {
    this.timer = setTimeout(() => {
      void this.run().finally(() => {
        if (!this.shutdown.signal.aborted) this.schedule();
      });
    }, this.config.retentionIntervalMs);
    this.timer.unref();
  }

  private async run(): Promise<void> {
    try {
      const { givenUp, owedGivenUp, deliveries, events } = await this.prune(
        new Date(),
      );
      if (givenUp > 0) {
        this.logger.warn(
          `retention: gave up ${givenUp} webhook deliveries not delivered within the retry window`,
        );
      }
      if (owedGivenUp > 0) {
        this.logger.warn(
          `retention: ${owedGivenUp} webhook subscriptions paused for longer than the retry window gave up the events owed to them from before it`,
        );
      }
      if (deliveries + events > 0) {
        this.logger.log(
          `retention: deleted ${deliveries} webhook deliveries and ${events} events`,
        );
      }
    } catch (error) {
      // the next run deletes what this one could not
      if (
        this.shutdown.signal.aborted ||
        isDatabaseUnavailable(error) ||
        isDatabaseBusy(error)
      ) {
        return;
      }
      this.logger.error(error, 'retention could not delete old events');
    }
  }

  /** Deletes what is past its retention at `now`; says how many rows of each. */
  async prune(now: Date): Promise<Pruned> {
    const before = (ms: number) => new Date(now.getTime() - ms);
    const kept = before(this.config.retentionMs);
    const retryWindowStart = before(this.config.retryWindowMs);
    const givenUp = await this.giveUpPending(retryWindowStart, now);
    const owedGivenUp = await this.owed.giveUpBefore(retryWindowStart);
    const deliveries =
      (await this.deleteDeliveries(['delivered', 'cancelled'], kept)) +
      (await this.deleteDeliveries(
        ['failed'],
        before(this.config.failedRetentionMs),
      ));
    const events = await this.inBatches(
      (batch) =>
        this.events
          .createQueryBuilder('event')
          .select('event.id', 'id')
          .where('event.created_at < :kept', { kept })
          .andWhere(
            'NOT EXISTS (SELECT 1 FROM webhook_deliveries delivery WHERE delivery.event_id = event.id)',
          )
          // nor one still owed to a paused subscription (owed-events.ts)
          .andWhere(
            'NOT EXISTS (SELECT 1 FROM webhook_subscriptions subscription WHERE subscription.removed_at IS NULL AND subscription.owed_since <= event.created_at)',
          )
          .limit(batch)
          .getRawMany<{ id: string }>(),
      (ids) => this.deleteIds(this.events, ids),
    );
    return { givenUp, owedGivenUp, deliveries, events };
  }

  /**
   * Pending deliveries made before `olderThan` and not being attempted now become failed: the
   * rows of a receiver paused for longer than the retry window would otherwise stay pending,
   * and kept, for ever.
   */
  private async giveUpPending(olderThan: Date, now: Date): Promise<number> {
    const expired = {
      status: 'pending' as const,
      createdAt: LessThan(olderThan),
    };
    // not while an attempt runs: its outcome is recorded by the dispatcher
    const idle = [
      { ...expired, claimedUntil: IsNull() },
      { ...expired, claimedUntil: LessThan(now) },
    ];
    return this.inBatches(
      (batch) =>
        this.deliveries.find({
          select: { id: true },
          where: idle,
          take: batch,
        }),
      async (ids) => {
        const { affected } = await this.deliveries.update(
          idle.map((where) => ({ ...where, id: In(ids) })),
          { status: 'failed', lastError: GIVEN_UP_ERROR, nextAttemptAt: now },
        );
        return affected ?? 0;
      },
    );
  }

  private deleteDeliveries(
    statuses: DeliveryStatus[],
    olderThan: Date,
  ): Promise<number> {
    return this.inBatches(
      (batch) =>
        this.deliveries.find({
          select: { id: true },
          where: { status: In(statuses), createdAt: LessThan(olderThan) },
          take: batch,
        }),
      (ids) => this.deleteIds(this.deliveries, ids),
    );
  }

  private async deleteIds<Entity extends ObjectLiteral>(
    repository: Repository<Entity>,
    ids: string[],
  ): Promise<number> {
    await repository.delete(ids);
    return ids.length;
  }

  /**
   * Finds a batch of ids, applies `change` to them, and again until a batch comes back short;
   * says how many rows `change` changed.
   */
  private async inBatches(
    find: (batch: number) => Promise<{ id: string }[]>,
    change: (ids: string[]) => Promise<number>,
  ): Promise<number> {
    let changed = 0;
    for (;;) {
      const rows = await find(RETENTION_BATCH);
      if (rows.length > 0) changed += await change(rows.map(({ id }) => id));
      if (rows.length < RETENTION_BATCH || this.shutdown.signal.aborted) {
        return changed;
      }
      await sleep(BATCH_PAUSE_MS);
    }
  }
}
