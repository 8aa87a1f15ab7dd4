import { Inject, Logger } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, IsNull, Not } from 'typeorm';
import { webhooksConfig, type WebhooksConfig } from './webhooks.config';
import { EntitySql } from '../../platform/database';
import { Job, type JobRun, type PeriodicJob } from '../../platform/jobs';
import { WebhookSubscription } from './webhook-subscription.entity';

/** How often every subscription's lag is looked at. */
export const LAG_CHECK_INTERVAL_MS = 5000;

/** An active subscription's oldest undelivered event, and whether it is marked lagging. */
export interface SubscriptionLag {
  id: string;
  /** When its oldest undelivered event was written; null when it is owed none. */
  oldestUndelivered: Date | null;
  laggingSince: Date | null;
}

/**
 * Every active subscription's oldest undelivered event (100 subscriptions at most), in one
 * statement: the oldest of its pending deliveries (the partial index of pending rows), of the
 * events of its types past its cursor (the log's order, from the cursor), and of the events
 * not yet given their place in the log (the partial index of those).
 */
export async function subscriptionLags(
  dataSource: DataSource,
): Promise<SubscriptionLag[]> {
  const subscriptions = new EntitySql(dataSource, WebhookSubscription);
  // tables named, not aliased, so that a plan shows which one it reads
  const ofItsTypes =
    `("webhook_subscriptions"."event_types" IS NULL OR ` +
    `(',' || "webhook_subscriptions"."event_types" || ',') LIKE ('%,' || "events"."type" || ',%'))`;
  const rows = await subscriptions.selectWithRows(
    `SELECT "id", "lagging_since", ` +
      `(SELECT MIN("webhook_deliveries"."created_at") FROM "webhook_deliveries" ` +
      `WHERE "webhook_deliveries"."subscription_id" = "webhook_subscriptions"."id" AND "webhook_deliveries"."status" = 'pending') AS "oldest_pending", ` +
      `(SELECT "events"."created_at" FROM "events" WHERE "events"."seq" > "webhook_subscriptions"."cursor" AND ${ofItsTypes} ` +
      `ORDER BY "events"."seq" LIMIT 1) AS "oldest_owed", ` +
      `(SELECT MIN("events"."created_at") FROM "events" WHERE "events"."seq" IS NULL AND ${ofItsTypes}) AS "oldest_unplaced" ` +
      `FROM "webhook_subscriptions" WHERE "removed_at" IS NULL`,
    [],
  );
  // the three are read as a Date column is (SQLite's datetime text)
  const dateColumn = dataSource
    .getMetadata(WebhookSubscription)
    .findColumnWithPropertyName('laggingSince')!;
  const asDate = (value: unknown) =>
    value === null || value === undefined
      ? null
      : (dataSource.driver.prepareHydratedValue(value, dateColumn) as Date);
  return rows.map(({ entity, row }) => {
    const times = [row.oldest_pending, row.oldest_owed, row.oldest_unplaced]
      .map(asDate)
      .filter((time): time is Date => time !== null);
    return {
      id: entity.id,
      oldestUndelivered: times.length
        ? new Date(Math.min(...times.map((time) => time.getTime())))
        : null,
      laggingSince: entity.laggingSince,
    };
  });
}

/** How far behind a subscription is at `now`, in ms: 0 when it is owed nothing. */
export function lagOf(
  { oldestUndelivered }: SubscriptionLag,
  now: number,
): number {
  return oldestUndelivered ? Math.max(0, now - oldestUndelivered.getTime()) : 0;
}

/**
 * Says in the log when a subscription falls behind and when it has caught up
 * (docs/webhooks.md, "How far behind"): every LAG_CHECK_INTERVAL_MS one instance reads every
 * subscription's lag; one whose oldest undelivered event is older than WEBHOOKS_LAG_WARN is
 * marked lagging, and one marked that is back within half of it is unmarked (so that a lag
 * about the threshold does not flap). Each mark is a conditional write, so that a check run
 * twice (after a crash, or beside the previous release's own timer) writes each line once.
 */
@Job('webhooks.lag-watch')
export class WebhookLagWatch implements PeriodicJob {
  private readonly logger = new Logger(WebhookLagWatch.name);
  readonly schedule = { every: LAG_CHECK_INTERVAL_MS };

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
  ) {}

  run(run: JobRun): Promise<void> {
    return this.check(run.now().getTime());
  }

  /**
   * One look at every subscription: marks and unmarks the lagging ones, a line for each mark
   * it changed.
   */
  async check(now = Date.now()): Promise<void> {
    const warnMs = this.config.lagWarnMs;
    const subscriptions = this.dataSource.getRepository(WebhookSubscription);
    for (const subscription of await subscriptionLags(this.dataSource)) {
      const lagMs = lagOf(subscription, now);
      const seconds = Math.round(lagMs / 1000);
      if (lagMs > warnMs && subscription.laggingSince === null) {
        const since = new Date(
          subscription.oldestUndelivered!.getTime() + warnMs,
        );
        const { affected } = await subscriptions.update(
          { id: subscription.id, laggingSince: IsNull() },
          { laggingSince: since },
        );
        if (affected) {
          this.logger.warn(
            `webhook subscription ${subscription.id} is lagging: its oldest undelivered event is ${seconds} s old, past WEBHOOKS_LAG_WARN (${warnMs / 1000} s)`,
          );
        }
      } else if (lagMs <= warnMs / 2 && subscription.laggingSince !== null) {
        const { affected } = await subscriptions.update(
          { id: subscription.id, laggingSince: Not(IsNull()) },
          { laggingSince: null },
        );
        if (affected) {
          const lagged = Math.round(
            (now - subscription.laggingSince.getTime()) / 1000,
          );
          this.logger.log(
            `webhook subscription ${subscription.id} caught up: its oldest undelivered event is ${seconds} s old, after ${lagged} s past WEBHOOKS_LAG_WARN`,
          );
        }
      }
    }
  }
}
