import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { IsNull, LessThanOrEqual, MoreThan, Repository } from 'typeorm';
import { OutboxEvent } from '../events/outbox-event.entity';
import { Metrics } from '../metrics/metrics';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookSubscription } from './webhook-subscription.entity';

interface OutboxSnapshot {
  pending: number;
  oldestPendingAgeSeconds: number;
  subscriptions: { healthy: number; failing: number; paused: number };
  rows: { events: number; webhook_deliveries: number };
}

/**
 * The outbox as Prometheus sees it, read from the database when scraped (never on the request
 * path): the backlog and its age, the receivers paused or failing, and the rows retention keeps.
 * One scrape reads them once, statement after statement, so that it holds one connection at
 * most. The instruments that count as things happen are the dispatcher's.
 */
@Injectable()
export class WebhookMetrics {
  private snapshot?: Promise<OutboxSnapshot>;

  constructor(
    metrics: Metrics,
    @InjectRepository(WebhookDelivery)
    private readonly deliveries: Repository<WebhookDelivery>,
    @InjectRepository(WebhookSubscription)
    private readonly subscriptions: Repository<WebhookSubscription>,
    @InjectRepository(OutboxEvent)
    private readonly events: Repository<OutboxEvent>,
  ) {
    const read = () => this.read();
    metrics.gauge(
      'plant_store_webhook_deliveries_pending',
      'Deliveries not yet delivered, failed or cancelled',
      [],
      async function () {
        this.set((await read()).pending);
      },
    );
    metrics.gauge(
      'plant_store_webhook_oldest_pending_age_seconds',
      'Age of the oldest pending delivery; 0 when none is pending',
      [],
      async function () {
        this.set((await read()).oldestPendingAgeSeconds);
      },
    );
    metrics.gauge(
      'plant_store_webhook_subscriptions',
      'Active subscriptions, by the state of their receiver',
      ['state'],
      async function () {
        for (const [state, count] of Object.entries(
          (await read()).subscriptions,
        )) {
          this.set({ state }, count);
        }
      },
    );
    metrics.gauge(
      'plant_store_table_rows',
      'Rows in the tables that retention keeps bounded',
      ['table'],
      async function () {
        for (const [table, count] of Object.entries((await read()).rows)) {
          this.set({ table }, count);
        }
      },
    );
  }

  /** The snapshot of the scrape under way, or a new one: one read for the four gauges. */
  private read(): Promise<OutboxSnapshot> {
    if (!this.snapshot) {
      this.snapshot = this.take().finally(() =>
        setImmediate(() => (this.snapshot = undefined)),
      );
    }
    return this.snapshot;
  }

  private async take(): Promise<OutboxSnapshot> {
    const now = new Date();
    const active = { removedAt: IsNull() };
    const pending = await this.deliveries.countBy({ status: 'pending' });
    const [oldest] = await this.deliveries.find({
      select: { id: true, createdAt: true },
      where: { status: 'pending' },
      order: { createdAt: 'ASC' },
      take: 1,
    });
    const all = await this.subscriptions.countBy(active);
    const paused = await this.subscriptions.countBy({
      ...active,
      pausedUntil: MoreThan(now),
    });
    const failing = await this.subscriptions.count({
      where: [
        { ...active, consecutiveFailures: MoreThan(0), pausedUntil: IsNull() },
        {
          ...active,
          consecutiveFailures: MoreThan(0),
          pausedUntil: LessThanOrEqual(now),
        },
      ],
    });
    return {
      pending,
      oldestPendingAgeSeconds: oldest
        ? Math.max(0, (now.getTime() - oldest.createdAt.getTime()) / 1000)
        : 0,
      subscriptions: { healthy: all - paused - failing, failing, paused },
      rows: {
        events: await this.events.count(),
        webhook_deliveries: await this.deliveries.count(),
      },
    };
  }
}
