import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  BeforeApplicationShutdown,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { InjectDataSource } from '@nestjs/typeorm';
import { In, IsNull, LessThan, MoreThan, Not, type DataSource } from 'typeorm';
import { StartupError } from '../common/errors/startup-error';
import { DURATION_FORMAT, parseDuration } from '../config/setting-kinds';
import { isDeclaredName } from '../common/modules/declared-name';
import { DatabaseClockService } from '../database/database-clock.service';
import type { PortableDataSource } from '../database/portable-data-source';
import { StoreFenceService } from '../database/store-fence.service';
import { takeableLeases } from '../jobs/leased-row';
import { Metrics } from '../metrics/metrics';
import { EventCatalogue } from './event-catalogue';
import {
  EventHandlerMark,
  type EventHandlerOptions,
  type HandlesEvents,
} from './event-handler.decorator';
import { EventHandlerState } from './event-handler.entity';
import { EventLog } from './event-log.entity';
import {
  DEFAULT_HANDLER_RETRY,
  HandlerLoop,
  RETRY_AT_BOUND_MS,
  type HandlerRetry,
} from './handler-loop';
import {
  type HandlerRow,
  type HandlerStore,
  type LoggedEvent,
  type SkippedAttempt,
} from './handler-store';
import { OutboxEvent } from './outbox-event.entity';
import { SkippedEvent } from './skipped-event.entity';

/**
 * A handler no instance has run for this long is retired: its events are no longer written
 * for it, and retention no longer keeps events for its cursor (the EventHandlersService migrations'
 * view says the same).
 */
export const HANDLER_RETIRED_AFTER_MS = 7 * 86_400_000;

/** The transaction of one event lost its lease: another instance handles the handler now. */
class LeaseLost extends Error {}

/**
 * Runs the `@EventHandler()` providers of every module (docs/decisions.md, "Reacting to
 * events"): each reads the event log from its own cursor, in order, one instance at a time
 * (a lease on its row), and handles each event in a transaction that also moves its cursor.
 */
@Injectable()
export class EventHandlersService
  implements OnApplicationBootstrap, BeforeApplicationShutdown
{
  // the context its lines have always had, which log readers filter on
  private readonly logger = new Logger('EventHandlers');
  private readonly loops: HandlerLoop[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly catalogue: EventCatalogue,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly metrics: Metrics,
    private readonly clock: DatabaseClockService,
    private readonly fence: StoreFenceService,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const instance = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    const names = new Set<string>();
    const loops: HandlerLoop[] = [];
    const store = new SqlHandlerStore(this.dataSource as PortableDataSource);
    for (const wrapper of this.discovery.getProviders({
      metadataKey: EventHandlerMark.KEY,
    })) {
      const { name, events, options } = this.discovery.getMetadataByDecorator(
        EventHandlerMark,
        wrapper,
      )!;
      const refuse = (problem: string) =>
        new StartupError(
          `@EventHandler('${name}') on ${String(wrapper.name)}: ${problem} (docs/conventions.md, "Reacting to events")`,
        );
      if (!isDeclaredName(name)) {
        throw refuse(
          "the name must be lowercase words joined by dots or dashes, at most 64 characters, as 'care.plant-deleted'",
        );
      }
      if (names.has(name)) throw refuse('the name is declared twice');
      names.add(name);
      if (events.length === 0) throw refuse('it handles no event');
      for (const { type } of events) {
        if (!this.catalogue.has(type)) {
          throw refuse(
            `no module declares ${type}: import EventsModule.forFeature([...]) with it in the module that publishes it`,
          );
        }
      }
      const handler = wrapper.instance as HandlesEvents;
      if (typeof handler?.handle !== 'function') {
        throw refuse('a handler has a `handle(event)` method');
      }
      const retry = retryOf(options ?? {}, refuse);
      loops.push(
        new HandlerLoop(
          name,
          events.map(({ type }) => type),
          handler,
          store,
          instance,
          this.logger,
          this.metrics,
          () => this.clock.now(),
          retry,
          () => !this.fence.writable,
        ),
      );
    }
    for (const loop of loops) {
      await loop.declare();
      this.loops.push(loop);
      loop.start();
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all(this.loops.map((loop) => loop.stop()));
  }
}

/** A handler's retry options as the loop takes them; a mistake stops the boot, naming it. */
function retryOf(
  options: EventHandlerOptions,
  refuse: (problem: string) => StartupError,
): HandlerRetry {
  const attempts = options.attempts ?? DEFAULT_HANDLER_RETRY.attempts;
  if (!Number.isSafeInteger(attempts) || attempts < 1 || attempts > 100) {
    throw refuse(
      `attempts must be a whole number from 1 to 100, got ${JSON.stringify(options.attempts)}`,
    );
  }
  const firstDelayMs =
    options.firstRetry === undefined
      ? DEFAULT_HANDLER_RETRY.firstDelayMs
      : typeof options.firstRetry === 'number'
        ? options.firstRetry
        : parseDuration(options.firstRetry);
  if (
    firstDelayMs === undefined ||
    !Number.isSafeInteger(firstDelayMs) ||
    firstDelayMs <= 0
  ) {
    throw refuse(
      `firstRetry must be a duration written ${DURATION_FORMAT.source} (500ms, 1s) or a positive number of milliseconds, got ${JSON.stringify(options.firstRetry)}`,
    );
  }
  return { attempts, firstDelayMs };
}

/** The handlers' rows and the event log, in SQL on both engines. */
export class SqlHandlerStore implements HandlerStore {
  constructor(private readonly dataSource: PortableDataSource) {}

  private get states() {
    return this.dataSource.getRepository(EventHandlerState);
  }

  async declare(name: string, types: string[], now: Date): Promise<void> {
    const head = await this.head();
    await this.states
      .createQueryBuilder()
      .insert()
      .into(EventHandlerState)
      .values({ name, eventTypes: types.join(','), cursor: head, seenAt: now })
      .orIgnore()
      .execute();
    await this.states.update(
      { name },
      { eventTypes: types.join(','), seenAt: now },
    );
  }

  async head(): Promise<bigint> {
    const log = await this.dataSource
      .getRepository(EventLog)
      .findOneBy({ id: 1 });
    return log?.lastSeq ?? 0n;
  }

  private get skipped() {
    return this.dataSource.getRepository(SkippedEvent);
  }

  async row(name: string): Promise<HandlerRow | null> {
    const {
      entities: [row],
      raw: [extra],
    } = await this.states
      .createQueryBuilder('handler')
      .addSelect(
        'EXISTS (SELECT 1 FROM event_handler_skips skipped WHERE skipped.handler = handler.name AND skipped.retry_requested_at IS NOT NULL)',
        'retries',
      )
      .where('handler.name = :name', { name })
      .getRawAndEntities<{ retries: boolean | number | bigint }>();
    if (row === undefined) return null;
    return { ...row, retries: Number(extra.retries) === 1 };
  }

  async claim(
    name: string,
    instance: string,
    now: Date,
    leaseMs: number,
  ): Promise<boolean> {
    const free = [
      ...takeableLeases(now, leaseMs),
      { leasedBy: instance },
    ].flatMap((lease) => [
      { name, ...lease, retryAt: IsNull() },
      { name, ...lease, retryAt: LessThan(now) },
      {
        name,
        ...lease,
        retryAt: MoreThan(new Date(now.getTime() + RETRY_AT_BOUND_MS)),
      },
    ]);
    const { affected } = await this.states.update(free, {
      leasedBy: instance,
      leasedUntil: new Date(now.getTime() + leaseMs),
      seenAt: now,
    });
    return affected === 1;
  }

  async renew(name: string, instance: string, until: Date): Promise<void> {
    await this.states.update(
      { name, leasedBy: instance },
      { leasedUntil: until },
    );
  }

  async release(name: string, instance: string): Promise<void> {
    await this.states.update(
      { name, leasedBy: instance },
      { leasedBy: null, leasedUntil: null },
    );
  }

  async eventsAfter(
    cursor: bigint,
    types: readonly string[],
    limit: number,
  ): Promise<LoggedEvent[]> {
    const events = await this.dataSource.getRepository(OutboxEvent).find({
      where: { seq: MoreThan(cursor), type: In(types) },
      order: { seq: 'ASC' },
      take: limit,
    });
    return events.map(({ id, type, seq, createdAt, payload }) => ({
      id,
      type,
      seq: seq!,
      createdAt,
      payload,
    }));
  }

  async handleOne(
    name: string,
    instance: string,
    seq: bigint,
    handle: () => Promise<void>,
  ): Promise<boolean> {
    return this.whileHeld(async () => {
      await handle();
      const { affected } = await this.states.update(
        { name, leasedBy: instance, cursor: LessThan(seq) },
        { cursor: seq, failures: 0, retryAt: null, lastError: null },
      );
      return affected === 1;
    });
  }

  /**
   * `work` in one transaction, whose writes stay only if it says the lease was still held:
   * false, everything rolled back, otherwise.
   */
  private async whileHeld(work: () => Promise<boolean>): Promise<boolean> {
    try {
      await this.dataSource.adoptingTransaction('SERIALIZABLE', async () => {
        if (!(await work())) throw new LeaseLost();
      });
      return true;
    } catch (error) {
      if (error instanceof LeaseLost) return false;
      throw error;
    }
  }

  async failed(
    name: string,
    instance: string,
    failures: number,
    retryAt: Date,
    error: string,
  ): Promise<void> {
    await this.states.update(
      { name, leasedBy: instance },
      { failures, retryAt, lastError: error },
    );
  }

  async passTo(name: string, instance: string, head: bigint): Promise<void> {
    await this.states.update(
      { name, leasedBy: instance, cursor: LessThan(head) },
      { cursor: head },
    );
  }

  async skip(
    name: string,
    instance: string,
    event: LoggedEvent,
    attempts: number,
    error: string,
    now: Date,
  ): Promise<boolean> {
    return this.whileHeld(async () => {
      const { affected } = await this.states.update(
        { name, leasedBy: instance, cursor: LessThan(event.seq) },
        { cursor: event.seq, failures: 0, retryAt: null, lastError: null },
      );
      if (affected !== 1) return false;
      await this.skipped.insert({
        handler: name,
        seq: event.seq,
        eventId: event.id,
        type: event.type,
        payload: event.payload,
        createdAt: event.createdAt,
        attempts,
        lastError: error,
        skippedAt: now,
        retryRequestedAt: null,
      });
      return true;
    });
  }

  async retriesOf(name: string, limit: number): Promise<SkippedAttempt[]> {
    const rows = await this.skipped.find({
      where: { handler: name, retryRequestedAt: Not(IsNull()) },
      order: { seq: 'ASC' },
      take: limit,
    });
    return rows.map(({ eventId, type, seq, createdAt, payload, attempts }) => ({
      id: eventId,
      type,
      seq,
      createdAt,
      payload,
      attempts,
    }));
  }

  async handleSkipped(
    name: string,
    instance: string,
    seq: bigint,
    handle: () => Promise<void>,
  ): Promise<boolean> {
    return this.whileHeld(async () => {
      await handle();
      const held = await this.states.countBy({ name, leasedBy: instance });
      const { affected } = await this.skipped.delete({
        handler: name,
        seq,
        retryRequestedAt: Not(IsNull()),
      });
      return held === 1 && affected === 1;
    });
  }

  async retryFailed(name: string, seq: bigint, error: string): Promise<void> {
    await this.skipped.increment({ handler: name, seq }, 'attempts', 1);
    await this.skipped.update(
      { handler: name, seq },
      { lastError: error, retryRequestedAt: null },
    );
  }
}
