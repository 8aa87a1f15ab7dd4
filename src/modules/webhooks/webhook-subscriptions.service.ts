import {
  currentIdempotencyKey,
  IdempotencyStore,
} from '../../platform/idempotency';
import { EMPTY_EVENTS_MESSAGE } from './dto/create-webhook-subscription.dto';
import {
  BadRequestException,
  HttpStatus,
  Inject,
  Injectable,
  NotFoundException,
} from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { randomInt, randomUUID } from 'node:crypto';
import { DataSource, In, IsNull, Repository } from 'typeorm';
import { webhooksConfig, type WebhooksConfig } from './webhooks.config';
import { DatabaseBusyError, isUniqueViolation } from '../../platform/database';
import { EventCatalogue, EventLog, OutboxEvent } from '../../platform/events';
import { describeResolvedProblem, describeUrlProblem } from './outbound-target';
import { WebhookDelivery } from './webhook-delivery.entity';
import { createSigningSecret } from './webhook-signature';
import {
  MAX_ACTIVE_SUBSCRIPTIONS,
  WebhookSubscription,
} from './webhook-subscription.entity';

// each one multiplies the deliveries of every event, and a list of them is one answer
export { MAX_ACTIVE_SUBSCRIPTIONS };

const SLOTS = Array.from(
  { length: MAX_ACTIVE_SUBSCRIPTIONS },
  (_, index) => index + 1,
);
/**
 * A create loses a slot only to another that took it, so it wins or finds none free within
 * about MAX_ACTIVE_SUBSCRIPTIONS attempts, unless removals keep freeing slots meanwhile.
 */
const MAX_SLOT_ATTEMPTS = 2 * MAX_ACTIVE_SUBSCRIPTIONS;

export interface NewSubscription {
  url: string;
  /** The event types to receive; every type, those added later included, when absent. */
  eventTypes?: string[];
}

/** A delivery with the type of the event it sends. */
export type DeliveryRecord = WebhookDelivery & { eventType: string };

/**
 * Webhook subscriptions and the record of their deliveries, for the HTTP API
 * (WebhookSubscriptionsController) and the operator's CLI alike, through TypeORM's Repository
 * (docs/conventions.md, "Persistence"). Each change is one unit of work: made whole or
 * not at all, so that a 503 on the way never leaves half of one behind.
 */
@Injectable()
export class WebhookSubscriptionsService {
  constructor(
    private readonly dataSource: DataSource,
    @InjectRepository(WebhookSubscription)
    private readonly subscriptions: Repository<WebhookSubscription>,
    @InjectRepository(WebhookDelivery)
    private readonly deliveries: Repository<WebhookDelivery>,
    @InjectRepository(OutboxEvent)
    private readonly events: Repository<OutboxEvent>,
    @InjectRepository(EventLog)
    private readonly log: Repository<EventLog>,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
    private readonly catalogue: EventCatalogue,
    private readonly idempotency: IdempotencyStore,
  ) {}

  /**
   * Subscribes a URL; the returned secret is shown this once. A URL the dispatcher would
   * refuse to call (a private address or a name that resolves to one, unless allowed) is
   * refused here, with 400; `resolved` when urlProblem has looked at it already.
   */
  async add(
    { url, eventTypes }: NewSubscription,
    { resolved = false }: { resolved?: boolean } = {},
  ): Promise<WebhookSubscription> {
    const problem = resolved
      ? describeUrlProblem(url, this.config.allowPrivateNetworks)
      : await this.urlProblem(url);
    if (problem) throw new BadRequestException(problem);
    if (eventTypes !== undefined) {
      if (eventTypes.length === 0) {
        throw new BadRequestException(EMPTY_EVENTS_MESSAGE);
      }
      const unknown = eventTypes.filter((type) => !this.catalogue.has(type));
      if (unknown.length > 0) {
        throw new BadRequestException(
          `events must be a non-empty list of event types, each one of ${this.catalogue.types.join(', ')}; unknown: ${unknown.join(', ')}`,
        );
      }
    }
    const subscription = this.subscriptions.create({
      id: randomUUID(),
      url,
      eventTypes: eventTypes ? [...new Set(eventTypes)] : null,
      secret: createSigningSecret(),
      removedAt: null,
    });
    const keyed = currentIdempotencyKey();
    subscription.createdWithKey = keyed ? JSON.stringify(keyed) : null;
    // READ COMMITTED: each slot's unique index decides between concurrent creates, and each
    // look at the free slots sees those taken meanwhile
    return this.dataSource.transaction('READ COMMITTED', async () => {
      // it receives the events from now on: those after the log's head
      subscription.cursor = (await this.log.findOneByOrFail({ id: 1 })).lastSeq;
      await this.insertInFreeSlot(subscription);
      return this.subscriptions.findOneByOrFail({ id: subscription.id });
    });
  }

  /**
   * Why the dispatcher would refuse to call `url`, its name resolved (up to 2 s) unless private
   * networks are allowed; undefined when it may. Asked before any transaction opens
   * (CallableUrlPipe), so that no connection is held while a name resolves.
   */
  async urlProblem(url: string): Promise<string | undefined> {
    const { allowPrivateNetworks } = this.config;
    return (
      describeUrlProblem(url, allowPrivateNetworks) ??
      (allowPrivateNetworks ? undefined : await describeResolvedProblem(url))
    );
  }

  /**
   * Inserts into one of the slots no active subscription holds, chosen at random so that
   * concurrent creates seldom pick the same one. The slot's unique index decides between
   * those that do: the losers read the free slots again. With none free, 400.
   */
  private async insertInFreeSlot(
    subscription: WebhookSubscription,
  ): Promise<void> {
    for (let attempt = 1; ; attempt += 1) {
      const held = new Set(
        (
          await this.subscriptions.find({
            select: { slot: true },
            where: { removedAt: IsNull() },
          })
        ).map(({ slot }) => slot),
      );
      const free = SLOTS.filter((slot) => !held.has(slot));
      if (free.length === 0) {
        throw new BadRequestException(
          `at most ${MAX_ACTIVE_SUBSCRIPTIONS} subscriptions can be active; remove one first`,
        );
      }
      subscription.slot = free[randomInt(free.length)];
      try {
        // a savepoint: a slot taken meanwhile undoes this insert alone
        await this.dataSource.transaction(() =>
          this.subscriptions.insert(subscription),
        );
        return;
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        if (attempt === MAX_SLOT_ATTEMPTS) {
          throw new DatabaseBusyError(
            'too many subscriptions are being created at once',
          );
        }
      }
    }
  }

  listActive(): Promise<WebhookSubscription[]> {
    return this.subscriptions.find({
      where: { removedAt: IsNull() },
      order: { createdAt: 'ASC', id: 'ASC' },
    });
  }

  /** An active subscription, or 404. */
  async findActive(id: string): Promise<WebhookSubscription> {
    const subscription = await this.subscriptions.findOneBy({
      id,
      removedAt: IsNull(),
    });
    if (!subscription) throw subscriptionNotFound(id);
    return subscription;
  }

  /**
   * Stops a subscription, erases its secret, and cancels what it still had pending; 404 when
   * none is active. The row stays, for the history of its deliveries.
   */
  async remove(id: string): Promise<void> {
    await this.dataSource.transaction('READ COMMITTED', async () => {
      const removed = await this.subscriptions.findOne({
        select: { id: true, createdWithKey: true },
        where: { id, removedAt: IsNull() },
      });
      const { affected } = await this.subscriptions.update(
        { id, removedAt: IsNull() },
        { removedAt: new Date(), secret: '' },
      );
      if (!affected || !removed) throw subscriptionNotFound(id);
      // the keyed create's stored answer would show the erased secret to a repeat
      if (removed.createdWithKey !== null) {
        await this.idempotency.replaceAnswer(
          JSON.parse(removed.createdWithKey) as { caller: string; key: string },
          HttpStatus.BAD_REQUEST,
          removedSubscriptionKeyMessage(id),
        );
      }
      await this.deliveries.update(
        { subscriptionId: id, status: 'pending' },
        { status: 'cancelled' },
      );
    });
  }

  /** The newest deliveries of one active subscription, newest first. */
  async deliveriesOf(id: string, limit: number): Promise<DeliveryRecord[]> {
    await this.findActive(id);
    return this.withEventTypes(
      await this.deliveries.find({
        where: { subscriptionId: id },
        order: { createdAt: 'DESC', id: 'ASC' },
        take: limit,
      }),
    );
  }

  /** The newest deliveries of every subscription, newest first (the CLI's view). */
  async recentDeliveries(limit: number): Promise<DeliveryRecord[]> {
    return this.withEventTypes(
      await this.deliveries.find({
        order: { createdAt: 'DESC', id: 'ASC' },
        take: limit,
      }),
    );
  }

  private async withEventTypes(
    deliveries: WebhookDelivery[],
  ): Promise<DeliveryRecord[]> {
    if (deliveries.length === 0) return [];
    const events = await this.events.find({
      select: { id: true, type: true },
      where: { id: In(deliveries.map(({ eventId }) => eventId)) },
    });
    const types = new Map(events.map(({ id, type }) => [id, type]));
    return deliveries.map((delivery) =>
      Object.assign(delivery, { eventType: types.get(delivery.eventId) ?? '' }),
    );
  }
}

function subscriptionNotFound(id: string) {
  return new NotFoundException(`no webhook subscription with id ${id} exists`);
}

/** What a repeat of a removed subscription's keyed create is told, instead of its secret. */
export function removedSubscriptionKeyMessage(id: string): string {
  return `this Idempotency-Key created the webhook subscription ${id}, which was removed since, its secret erased: create another with a new key`;
}
