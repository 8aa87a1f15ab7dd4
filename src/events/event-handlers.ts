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
import { In, IsNull, LessThan, MoreThan, type DataSource } from 'typeorm';
import { StartupError } from '../common/errors/startup-error';
import { isDeclaredName } from '../common/modules/declared-name';
import { parseLosslessJson } from '../common/json/lossless-json';
import {
  isDatabaseBusy,
  isDatabaseUnavailable,
} from '../database/database-errors';
import type { PortableDataSource } from '../database/portable-data-source';
import { Metrics } from '../metrics/metrics';
import { EventCatalogue } from './event-catalogue';
import {
  EventHandlerMark,
  type HandledEvent,
  type HandlesEvents,
} from './event-handler.decorator';
import { EventHandlerState } from './event-handler.entity';
import { EventLog } from './event-log.entity';
import { OutboxEvent } from './outbox-event.entity';

/** How often an idle handler looks for new events. */
export const HANDLER_POLL_MS = 250;
/** Events one turn of a handler reads at most, each handled in a transaction of its own. */
export const HANDLER_BATCH = 100;
/** How long an instance holds a handler without renewing it before another may take over. */
export const HANDLER_LEASE_MS = 30_000;
/** The pause after a handler's first failure at an event, doubling up to HANDLER_MAX_RETRY_MS. */
export const HANDLER_RETRY_BASE_MS = 1000;
export const HANDLER_MAX_RETRY_MS = 300_000;
/**
 * A handler no instance has run for this long is retired: its events are no longer written
 * for it, and retention no longer keeps events for its cursor (the EventHandlers migrations'
 * view says the same).
 */
export const HANDLER_RETIRED_AFTER_MS = 7 * 86_400_000;

/** The pause before the next attempt after `failures` failed attempts in a row. */
export function retryDelayMs(failures: number): number {
  return Math.min(
    HANDLER_MAX_RETRY_MS,
    HANDLER_RETRY_BASE_MS * 2 ** Math.max(0, failures - 1),
  );
}

/** The transaction of one event lost its lease: another instance handles the handler now. */
class LeaseLost extends Error {}

/**
 * Runs the `@EventHandler()` providers of every module (docs/decisions.md, "Reacting to
 * events"): each reads the event log from its own cursor, in order, one instance at a time
 * (a lease on its row), and handles each event in a transaction that also moves its cursor.
 */
@Injectable()
export class EventHandlers
  implements OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly logger = new Logger(EventHandlers.name);
  private readonly loops: HandlerLoop[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly catalogue: EventCatalogue,
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly metrics: Metrics,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const instance = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    const names = new Set<string>();
    const loops: HandlerLoop[] = [];
    for (const wrapper of this.discovery.getProviders({
      metadataKey: EventHandlerMark.KEY,
    })) {
      const { name, events } = this.discovery.getMetadataByDecorator(
        EventHandlerMark,
        wrapper,
      )!;
      const refuse = (problem: string) =>
        new StartupError(
          `@EventHandler('${name}') on ${String(wrapper.name)}: ${problem} (docs/adding-a-module.md, "Reacting to events")`,
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
      loops.push(
        new HandlerLoop(
          name,
          events.map(({ type }) => type),
          handler,
          this.dataSource as PortableDataSource,
          instance,
          this.logger,
          this.metrics,
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

/** One handler on one instance. */
class HandlerLoop {
  private readonly stopping = new AbortController();
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    private readonly name: string,
    private readonly types: string[],
    private readonly handler: HandlesEvents,
    private readonly dataSource: PortableDataSource,
    private readonly instance: string,
    private readonly logger: Logger,
    private readonly metrics: Metrics,
  ) {}

  private get states() {
    return this.dataSource.getRepository(EventHandlerState);
  }

  /**
   * Its row, made on its first boot with the cursor at the log's head (the events before it
   * are not its business), its types kept current, and seen now.
   */
  async declare(): Promise<void> {
    const now = new Date();
    const head = await this.head();
    await this.states
      .createQueryBuilder()
      .insert()
      .into(EventHandlerState)
      .values({
        name: this.name,
        eventTypes: this.types.join(','),
        cursor: head,
        seenAt: now,
      })
      .orIgnore()
      .execute();
    await this.states.update(
      { name: this.name },
      { eventTypes: this.types.join(','), seenAt: now },
    );
  }

  start(): void {
    this.wakeIn(0);
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    clearTimeout(this.timer);
    await this.running;
  }

  private wakeIn(ms: number): void {
    if (this.stopping.signal.aborted) return;
    this.timer = setTimeout(() => {
      this.running = this.turn().then(
        (next) => this.wakeIn(next),
        (error: unknown) => {
          if (!isDatabaseUnavailable(error) && !isDatabaseBusy(error)) {
            this.logger.error(
              error,
              `event handler ${this.name} could not run`,
            );
          }
          this.wakeIn(HANDLER_RETRY_BASE_MS);
        },
      );
    }, ms);
    this.timer.unref();
  }

  private async head(): Promise<bigint> {
    const log = await this.dataSource
      .getRepository(EventLog)
      .findOneBy({ id: 1 });
    return log?.lastSeq ?? 0n;
  }

  /** One turn: the events past its cursor, if any and if it may; says when to look again. */
  private async turn(): Promise<number> {
    const [head, state] = [
      await this.head(),
      await this.states.findOneBy({ name: this.name }),
    ];
    if (state === null) return HANDLER_POLL_MS;
    const now = new Date();
    if (state.retryAt !== null && state.retryAt > now) {
      return Math.min(
        state.retryAt.getTime() - now.getTime(),
        HANDLER_POLL_MS * 8,
      );
    }
    if (state.cursor >= head) return HANDLER_POLL_MS;
    if (!(await this.claim(now))) return HANDLER_POLL_MS;
    try {
      return await this.handleFrom(state, head);
    } finally {
      await this.states
        .update(
          { name: this.name, leasedBy: this.instance },
          { leasedBy: null, leasedUntil: null },
        )
        .catch(() => undefined);
    }
  }

  /** Takes the handler for a lease, if nobody holds it and no retry is pending. */
  private async claim(now: Date): Promise<boolean> {
    const free = [
      { leasedUntil: IsNull() },
      { leasedUntil: LessThan(now) },
    ].flatMap((lease) => [
      { name: this.name, ...lease, retryAt: IsNull() },
      { name: this.name, ...lease, retryAt: LessThan(now) },
    ]);
    const { affected } = await this.states.update(free, {
      leasedBy: this.instance,
      leasedUntil: new Date(now.getTime() + HANDLER_LEASE_MS),
      seenAt: now,
    });
    return affected === 1;
  }

  /** Handles the events after its cursor up to `head`, in order; says when to look again. */
  private async handleFrom(
    state: EventHandlerState,
    head: bigint,
  ): Promise<number> {
    const events = await this.dataSource.getRepository(OutboxEvent).find({
      where: {
        seq: MoreThan(state.cursor),
        type: In(this.types),
      },
      order: { seq: 'ASC' },
      take: HANDLER_BATCH,
    });
    const due = events.filter(({ seq }) => seq !== null && seq <= head);
    let renewAt = Date.now() + HANDLER_LEASE_MS / 3;
    for (const event of due) {
      if (this.stopping.signal.aborted) return 0;
      if (Date.now() > renewAt) {
        await this.states.update(
          { name: this.name, leasedBy: this.instance },
          { leasedUntil: new Date(Date.now() + HANDLER_LEASE_MS) },
        );
        renewAt = Date.now() + HANDLER_LEASE_MS / 3;
      }
      const failedFor = await this.handleOne(event, state.failures);
      if (failedFor !== undefined) return failedFor;
    }
    if (due.length === HANDLER_BATCH) return 0;
    // past the events of other types too, up to the head it read
    await this.states.update(
      {
        name: this.name,
        leasedBy: this.instance,
        cursor: LessThan(head),
      },
      { cursor: head },
    );
    return HANDLER_POLL_MS;
  }

  /** One event, and the cursor past it, in one transaction; on a failure, when to try again. */
  private async handleOne(
    event: OutboxEvent,
    failures: number,
  ): Promise<number | undefined> {
    const handled: HandledEvent = {
      id: event.id,
      type: event.type,
      seq: event.seq!,
      createdAt: event.createdAt,
      payload: parseLosslessJson(event.payload),
    };
    try {
      await this.dataSource.adoptingTransaction('SERIALIZABLE', async () => {
        await this.handler.handle(handled);
        const { affected } = await this.states.update(
          { name: this.name, leasedBy: this.instance },
          { cursor: handled.seq, failures: 0, retryAt: null, lastError: null },
        );
        if (affected !== 1) throw new LeaseLost();
      });
      this.metrics.eventHandlerRuns.inc({
        handler: this.name,
        outcome: 'handled',
      });
      return undefined;
    } catch (error) {
      if (error instanceof LeaseLost) return HANDLER_POLL_MS;
      const attempt = failures + 1;
      const delay = retryDelayMs(attempt);
      const message = error instanceof Error ? error.message : String(error);
      this.metrics.eventHandlerRuns.inc({
        handler: this.name,
        outcome: 'failed',
      });
      await this.states.update(
        { name: this.name, leasedBy: this.instance },
        {
          failures: attempt,
          retryAt: new Date(Date.now() + delay),
          lastError: message.slice(0, 1000),
        },
      );
      if (!isDatabaseUnavailable(error) && !isDatabaseBusy(error)) {
        this.logger.error(
          error,
          `event handler ${this.name} failed at ${handled.type} ${handled.id} (its place in the log: ${handled.seq}), attempt ${attempt}; the events after it wait, and it is tried again in ${Math.round(delay / 1000)} s`,
        );
      }
      return delay;
    }
  }
}
