import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, IsNull } from 'typeorm';
import { DatabaseAvailabilityService } from '../../platform/database';
import { EventLog } from '../../platform/events';
import { Metrics } from '../../platform/metrics';
import { conditionOf } from './receiver-state';
import { lagOf, subscriptionLags } from './webhook-lag';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookSubscription } from './webhook-subscription.entity';

interface OutboxSnapshot {
  pending: number;
  backlog: number;
  oldestPendingAgeSeconds: number;
  lagSeconds: number;
  subscriptions: { healthy: number; failing: number; paused: number };
  rows: { events: number; webhook_deliveries: number };
  /** When it was read (ms). */
  at: number;
}

/** A scrape within this long of the last read shares it: scrapers cost one read a while. */
export const SNAPSHOT_TTL_MS = 5000;

/**
 * How long a scrape waits for a new read: then it answers with the last values and
 * `plant_store_database_up` 0, well within the metrics port's own cut (METRICS_TIMEOUT_MS),
 * so that a database that hangs shows as down rather than as a target that never answers.
 */
export const SNAPSHOT_WAIT_MS = 1000;

/** Pending deliveries counted at most: more than the design lets the subscriptions hold. */
const PENDING_COUNTED = 100_000;

/**
 * The outbox as Prometheus sees it, read from the database when scraped (never on the request
 * path), at a cost that does not grow with the tables (docs/observability.md): pending
 * deliveries through the index of pending rows (a cap per subscription by construction), the
 * oldest through the index by status and age, the subscriptions (100 at most) with the log's
 * head for the events that wait past their cursors, each subscription's lag (webhook-lag.ts,
 * through the same indexes and the log's order), and the tables' rows as the engines estimate
 * them. Scrapes within SNAPSHOT_TTL_MS share one read. While the database does not
 * answer, a scrape still answers: the last values, their age, and `plant_store_database_up` 0.
 */
@Injectable()
export class WebhookMetricsService {
  private snapshot?: OutboxSnapshot;
  private reading?: Promise<OutboxSnapshot | undefined>;
  /** A scrape's wait for `reading`, bounded by SNAPSHOT_WAIT_MS. */
  private waiting?: Promise<OutboxSnapshot | undefined>;
  /** The last read failed: the values are the last good ones. */
  private failed = false;

  constructor(
    metrics: Metrics,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly database: DatabaseAvailabilityService,
  ) {
    const read = () => this.read();
    metrics.gauge(
      'plant_store_webhook_deliveries_pending',
      'Deliveries made and not yet delivered, failed or cancelled',
      [],
      async function () {
        const snapshot = await read();
        if (snapshot) this.set(snapshot.pending);
        else this.reset();
      },
    );
    metrics.gauge(
      'plant_store_webhook_backlog_events',
      'Events waiting in the log past the cursors of the active subscriptions that receive them, summed (an upper bound: a cursor passes the events of other types too)',
      [],
      async function () {
        const snapshot = await read();
        if (snapshot) this.set(snapshot.backlog);
        else this.reset();
      },
    );
    metrics.gauge(
      'plant_store_webhook_oldest_pending_age_seconds',
      'Age of the oldest pending delivery; 0 when none is pending',
      [],
      async function () {
        const snapshot = await read();
        if (snapshot) this.set(snapshot.oldestPendingAgeSeconds);
        else this.reset();
      },
    );
    metrics.gauge(
      'plant_store_webhook_lag_seconds',
      'Age of the oldest event an active subscription is owed and has not received (a pending delivery, or an event of its types past its cursor), the most of any; 0 when none is owed',
      [],
      async function () {
        const snapshot = await read();
        if (snapshot) this.set(snapshot.lagSeconds);
        else this.reset();
      },
    );
    metrics.gauge(
      'plant_store_webhook_subscriptions',
      'Active subscriptions, by the state of their receiver',
      ['state'],
      async function () {
        const snapshot = await read();
        this.reset();
        if (!snapshot) return;
        for (const [state, count] of Object.entries(snapshot.subscriptions)) {
          this.set({ state }, count);
        }
      },
    );
    metrics.gauge(
      'plant_store_table_rows',
      "Rows in the tables that retention keeps bounded, as the engine estimates them (PostgreSQL's statistics, the span of SQLite's row ids)",
      ['table'],
      async function () {
        const snapshot = await read();
        this.reset();
        if (!snapshot) return;
        for (const [table, count] of Object.entries(snapshot.rows)) {
          this.set({ table }, count);
        }
      },
    );
    metrics.gauge(
      'plant_store_webhook_snapshot_age_seconds',
      'How old the outbox values above are: a few seconds at most while the database answers, growing while it does not; +Inf before the first read',
      [],
      async function () {
        const snapshot = await read();
        // never read: as old as can be, so that an alert on the age fires
        this.set(snapshot ? (Date.now() - snapshot.at) / 1000 : Infinity);
      },
    );
    const availability = this.database;
    const failing = () => this.failed;
    metrics.gauge(
      'plant_store_database_up',
      '1 while the database answers, 0 while it does not (within 1 s of a scrape): then the outbox values are the last ones read, as old as plant_store_webhook_snapshot_age_seconds says',
      [],
      async function () {
        await read();
        this.set(availability.answers && !failing() ? 1 : 0);
      },
    );
  }

  /**
   * The snapshot of this while, or a new one; the last good one when the database fails or
   * does not answer within SNAPSHOT_WAIT_MS (the read goes on, for the scrapes after).
   */
  private read(): Promise<OutboxSnapshot | undefined> {
    if (this.snapshot && Date.now() - this.snapshot.at < SNAPSHOT_TTL_MS) {
      return Promise.resolve(this.snapshot);
    }
    // the gauges of one scrape share the read and its wait
    this.waiting ??= this.readWithin(SNAPSHOT_WAIT_MS).finally(
      () => (this.waiting = undefined),
    );
    return this.waiting;
  }

  /** A new read, or the last good snapshot once it has taken `ms` (the read goes on). */
  private readWithin(ms: number): Promise<OutboxSnapshot | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<OutboxSnapshot | undefined>((resolve) => {
      timer = setTimeout(() => {
        this.failed = true;
        resolve(this.snapshot);
      }, ms);
    });
    return Promise.race([this.reading ?? this.startReading(), waited]).finally(
      () => clearTimeout(timer),
    );
  }

  private startReading(): Promise<OutboxSnapshot | undefined> {
    return (this.reading = this.take()
      .then(
        (snapshot) => {
          this.failed = false;
          return (this.snapshot = snapshot);
        },
        () => {
          this.failed = true;
          return this.snapshot;
        },
      )
      .finally(() => (this.reading = undefined)));
  }

  private async take(): Promise<OutboxSnapshot> {
    const now = new Date();
    const [{ pending }] = await this.dataSource.query<
      { pending: string | bigint | number }[]
    >(
      `SELECT COUNT(*) AS "pending" FROM (SELECT 1 FROM "webhook_deliveries" WHERE "status" = 'pending' LIMIT ${PENDING_COUNTED}) AS "capped"`,
    );
    const oldest = await this.dataSource
      .getRepository(WebhookDelivery)
      .findOne({
        select: { id: true, createdAt: true },
        where: { status: 'pending' },
        order: { createdAt: 'ASC' },
      });
    const head =
      (await this.dataSource.getRepository(EventLog).findOneBy({ id: 1 }))
        ?.lastSeq ?? 0n;
    const subscriptions = { healthy: 0, failing: 0, paused: 0 };
    let backlog = 0n;
    for (const subscription of await this.dataSource
      .getRepository(WebhookSubscription)
      .findBy({ removedAt: IsNull() })) {
      const condition = conditionOf(
        {
          consecutiveFailures: subscription.consecutiveFailures,
          pausedUntil: subscription.pausedUntil,
          pauseLevel: subscription.pauseLevel,
          epoch: subscription.receiverEpoch,
          probeUntil: subscription.probeUntil,
        },
        now,
      );
      subscriptions[
        condition === 'healthy'
          ? 'healthy'
          : condition === 'failing'
            ? 'failing'
            : 'paused'
      ] += 1;
      if (head > subscription.cursor) backlog += head - subscription.cursor;
    }
    const lags = await subscriptionLags(this.dataSource);
    return {
      pending: Number(pending),
      backlog: Number(backlog),
      oldestPendingAgeSeconds: oldest
        ? Math.max(0, (now.getTime() - oldest.createdAt.getTime()) / 1000)
        : 0,
      lagSeconds:
        Math.max(0, ...lags.map((lag) => lagOf(lag, now.getTime()))) / 1000,
      subscriptions,
      rows: await this.estimatedRows(),
      at: now.getTime(),
    };
  }

  /**
   * The rows of the two tables as the engine estimates them, at no cost that grows with them:
   * PostgreSQL's count of live rows, which its statistics keep at every insert and delete,
   * reported by each session up to a second after its commit (the planner's `reltuples` is -1
   * until a table is first analysed, and only as fresh as the last analyse); SQLite's span of
   * row ids (the ends of its b-tree; rows deleted in between count until their neighbours go).
   */
  private async estimatedRows(): Promise<OutboxSnapshot['rows']> {
    if (this.dataSource.options.type === 'postgres') {
      const rows = await this.dataSource.query<
        { relname: string; estimate: string }[]
      >(
        `SELECT c.relname, COALESCE(s.n_live_tup, GREATEST(c.reltuples, 0))::bigint AS estimate ` +
          `FROM pg_class c LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid ` +
          `WHERE c.oid IN (to_regclass('events'), to_regclass('webhook_deliveries'))`,
      );
      const of = (table: string) =>
        Number(rows.find(({ relname }) => relname === table)?.estimate ?? 0);
      return {
        events: of('events'),
        webhook_deliveries: of('webhook_deliveries'),
      };
    }
    // each end on its own, which SQLite reads from its b-tree: MAX(rowid) - MIN(rowid) in one
    // SELECT scans the whole table
    const span = async (table: string) => {
      const [{ span }] = await this.dataSource.query<{ span: bigint | null }[]>(
        `SELECT (SELECT MAX(rowid) FROM "${table}") - (SELECT MIN(rowid) FROM "${table}") + 1 AS span`,
      );
      return Number(span ?? 0);
    };
    return {
      events: await span('events'),
      webhook_deliveries: await span('webhook_deliveries'),
    };
  }
}
