import { Inject, Logger } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import {
  In,
  IsNull,
  LessThan,
  MoreThan,
  Not,
  Repository,
  type ObjectLiteral,
  type SelectQueryBuilder,
} from 'typeorm';
import { webhooksConfig, type WebhooksConfig } from './webhooks.config';
import {
  EventHandlerState,
  HANDLER_RETIRED_AFTER_MS,
  OutboxEvent,
} from '../../platform/events';
import { STORED_TIME_SLACK_MS } from '../../platform/database';
import { CLAIM_MARGIN_MS } from './lane-pace';
import {
  Job,
  type JobRun,
  type JobSchedule,
  type PeriodicJob,
} from '../../platform/jobs';
import type { DeliveryStatus } from './webhook-delivery.entity';
import { WebhookDelivery } from './webhook-delivery.entity';
import { WebhookSubscription } from './webhook-subscription.entity';

/** Rows one statement deletes: short enough that no lock is held for long. */
export const RETENTION_BATCH = 1000;

export interface Pruned {
  /** Pending deliveries of paused subscriptions past the retry window, marked failed. */
  givenUp: number;
  /**
   * Paused subscriptions whose cursor was moved past the events from before the retry window:
   * those events are given up for them.
   */
  cursorsMoved: number;
  deliveries: number;
  events: number;
}

/** What a delivery given up by retention says in its lastError. */
export const GIVEN_UP_ERROR =
  'not delivered within the retry window (WEBHOOKS_RETRY_WINDOW): given up';

/**
 * Keeps the outbox and the delivery history bounded (docs/decisions.md, "Retention"). A paused
 * subscription gives up what is older than the retry window, since none of it is attempted
 * while it is paused: its pending deliveries made before the window become failed, and its
 * cursor moves past the events from before the window. A subscription that is not paused
 * gives up nothing here: its failing deliveries are failed by the dispatcher once their next
 * try would pass the window. Then delivered and cancelled deliveries older than
 * EVENTS_RETENTION go, failed ones older than EVENTS_FAILED_RETENTION, and the events older
 * than EVENTS_RETENTION that no delivery refers to and every cursor has passed, all in batches
 * of RETENTION_BATCH rows, every WEBHOOKS_RETENTION_INTERVAL on one instance. A run that
 * stops at shutdown leaves the rest to the next; a run repeated after a crash deletes nothing
 * twice.
 */
@Job('webhooks.retention')
export class RetentionService implements PeriodicJob {
  private readonly logger = new Logger(RetentionService.name);
  readonly schedule: JobSchedule;

  constructor(
    @InjectRepository(WebhookDelivery)
    private readonly deliveries: Repository<WebhookDelivery>,
    @InjectRepository(OutboxEvent)
    private readonly events: Repository<OutboxEvent>,
    @InjectRepository(WebhookSubscription)
    private readonly subscriptions: Repository<WebhookSubscription>,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
  ) {
    this.schedule = { every: config.retentionIntervalMs };
  }

  async run(run: JobRun): Promise<void> {
    const pulledBack = await this.pullBackTimesAhead(run.now());
    if (pulledBack > 0) {
      this.logger.warn(
        `retention: ${pulledBack} webhook retry, claim and pause times lay further ahead than any instance sets them (written by a clock that was ahead), and were brought back to now`,
      );
    }
    const { givenUp, cursorsMoved, deliveries, events } = await this.prune(
      run.now(),
      run,
    );
    if (givenUp > 0) {
      this.logger.warn(
        `retention: gave up ${givenUp} webhook deliveries of paused subscriptions not delivered within the retry window`,
      );
    }
    if (cursorsMoved > 0) {
      this.logger.warn(
        `retention: ${cursorsMoved} webhook subscriptions paused for longer than the retry window gave up their events from before it`,
      );
    }
    if (deliveries + events > 0) {
      this.logger.log(
        `retention: deleted ${deliveries} webhook deliveries and ${events} events`,
      );
    }
  }

  /**
   * Times of the webhooks further ahead than any instance sets them came from a clock that was
   * ahead (docs/decisions.md, "Time that decides for others"), and would hold a delivery or a
   * receiver back until then: each is brought back to `now` (a claim, cleared). Says how many.
   */
  async pullBackTimesAhead(now: Date): Promise<number> {
    const beyond = (ms: number) =>
      new Date(now.getTime() + ms + STORED_TIME_SLACK_MS);
    const { retryMaxDelayMs, pauseMs, timeoutMs } = this.config;
    const retries = await this.deliveries.update(
      {
        status: 'pending',
        nextAttemptAt: MoreThan(beyond(retryMaxDelayMs)),
      },
      { nextAttemptAt: now },
    );
    const claims = await this.deliveries.update(
      {
        status: 'pending',
        claimedUntil: MoreThan(beyond(timeoutMs + CLAIM_MARGIN_MS)),
      },
      { claimedUntil: null },
    );
    const pauses = await this.subscriptions.update(
      { pausedUntil: MoreThan(beyond(Math.max(pauseMs, retryMaxDelayMs))) },
      { pausedUntil: now },
    );
    return (
      (retries.affected ?? 0) + (claims.affected ?? 0) + (pauses.affected ?? 0)
    );
  }

  /**
   * Deletes what is past its retention at `now`; says how many rows of each. Between two
   * batches it waits for `run.nextBatch()`, and ends when that says so.
   */
  async prune(
    now: Date,
    run: Pick<JobRun, 'nextBatch'> = { nextBatch: () => Promise.resolve(true) },
  ): Promise<Pruned> {
    const before = (ms: number) => new Date(now.getTime() - ms);
    const kept = before(this.config.retentionMs);
    const retryWindowStart = before(this.config.retryWindowMs);
    const givenUp = await this.giveUpPending(retryWindowStart, now, run);
    const cursorsMoved = await this.movePausedCursors(retryWindowStart);
    const deliveries =
      (await this.deleteDeliveries(['delivered', 'cancelled'], kept, run)) +
      (await this.deleteDeliveries(
        ['failed'],
        before(this.config.failedRetentionMs),
        run,
      ));
    // the events every active subscription's and live handler's cursor has passed; with
    // neither, every one
    const lowest = await this.lowestCursor(now);
    const events = await this.inBatches(
      run,
      (batch) => {
        const query = this.events
          .createQueryBuilder('event')
          .select('event.id', 'id')
          .where('event.created_at < :kept', { kept })
          .andWhere('event.seq IS NOT NULL')
          .andWhere(
            'NOT EXISTS (SELECT 1 FROM webhook_deliveries delivery WHERE delivery.event_id = event.id)',
          );
        if (lowest !== null) {
          query.andWhere('event.seq <= :lowest', { lowest: String(lowest) });
        }
        return query.limit(batch).getRawMany<{ id: string }>();
      },
      (ids) => this.deleteIds(this.events, ids),
    );
    return { givenUp, cursorsMoved, deliveries, events };
  }

  /** The lowest cursor of the active subscriptions and the live event handlers; null with none. */
  private async lowestCursor(now: Date): Promise<bigint | null> {
    const lowestOf = async (
      rows: SelectQueryBuilder<ObjectLiteral>,
    ): Promise<bigint | null> => {
      const { lowest } = (await rows
        .select('MIN(consumer.cursor)', 'lowest')
        .getRawOne<{ lowest: string | bigint | null }>())!;
      return lowest === null ? null : BigInt(lowest);
    };
    const cursors = [
      await lowestOf(
        this.subscriptions
          .createQueryBuilder('consumer')
          .where('consumer.removed_at IS NULL'),
      ),
      await lowestOf(
        this.subscriptions.manager
          .getRepository(EventHandlerState)
          .createQueryBuilder('consumer')
          .where('consumer.seen_at > :since', {
            since: new Date(now.getTime() - HANDLER_RETIRED_AFTER_MS),
          }),
      ),
    ].filter((cursor) => cursor !== null);
    return cursors.length === 0
      ? null
      : cursors.reduce((low, cursor) => (cursor < low ? cursor : low));
  }

  /**
   * Pending deliveries of paused subscriptions, made for events before `olderThan` and not
   * being attempted now, become failed: none of them is attempted while their receiver is
   * paused, and would otherwise be kept for ever.
   */
  private async giveUpPending(
    olderThan: Date,
    now: Date,
    run: Pick<JobRun, 'nextBatch'>,
  ): Promise<number> {
    const paused = this.subscriptions
      .createQueryBuilder('subscription')
      .select('subscription.id')
      .where('subscription.paused_until IS NOT NULL');
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
      run,
      (batch) =>
        this.deliveries
          .createQueryBuilder('delivery')
          .select('delivery.id', 'id')
          .where('delivery.status = :pending', { pending: 'pending' })
          .andWhere('delivery.created_at < :olderThan', { olderThan })
          .andWhere(
            '(delivery.claimed_until IS NULL OR delivery.claimed_until < :now)',
            { now },
          )
          .andWhere(`delivery.subscription_id IN (${paused.getQuery()})`)
          .limit(batch)
          .getRawMany<{ id: string }>(),
      async (ids) => {
        const { affected } = await this.deliveries.update(
          idle.map((where) => ({ ...where, id: In(ids) })),
          { status: 'failed', lastError: GIVEN_UP_ERROR, nextAttemptAt: now },
        );
        return affected ?? 0;
      },
    );
  }

  /**
   * The cursor of a paused subscription moves past the events from before `olderThan`: it is
   * not made their deliveries when its receiver answers again. One statement: the place of
   * the newest event before the window, found by the events' time index.
   */
  private async movePausedCursors(olderThan: Date): Promise<number> {
    const last = await this.events.findOne({
      select: { id: true, seq: true },
      where: { createdAt: LessThan(olderThan), seq: Not(IsNull()) },
      order: { createdAt: 'DESC' },
    });
    if (!last?.seq) return 0;
    const { affected } = await this.subscriptions.update(
      {
        removedAt: IsNull(),
        pausedUntil: Not(IsNull()),
        cursor: LessThan(last.seq),
      },
      { cursor: last.seq },
    );
    return affected ?? 0;
  }

  private deleteDeliveries(
    statuses: DeliveryStatus[],
    olderThan: Date,
    run: Pick<JobRun, 'nextBatch'>,
  ): Promise<number> {
    return this.inBatches(
      run,
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
    run: Pick<JobRun, 'nextBatch'>,
    find: (batch: number) => Promise<{ id: string }[]>,
    change: (ids: string[]) => Promise<number>,
  ): Promise<number> {
    let changed = 0;
    for (;;) {
      const rows = await find(RETENTION_BATCH);
      if (rows.length > 0) changed += await change(rows.map(({ id }) => id));
      if (rows.length < RETENTION_BATCH || !(await run.nextBatch())) {
        return changed;
      }
    }
  }
}
