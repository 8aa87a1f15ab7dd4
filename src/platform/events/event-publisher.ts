import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { stringifyLosslessJson } from '../common/json/lossless-json';
import { EntitySql } from '../database/entity-sql';
import { transactionRunnerOf } from '../database/transaction-context';
import { EventCatalogue } from './event-catalogue';
import type { EventDefinition } from './event-definition';
import { isConsumed } from './event-triggers';
import { OutboxEvent } from './outbox-event.entity';

/**
 * Publishes events from TypeScript: `publish` writes the outbox row in the caller's
 * transaction, so the event exists exactly when the change that caused it is committed, and
 * a rolled-back change leaves no event behind. As with the triggers, an event of a type that
 * no consumer wants (the `event_consumers` view) is not written at all.
 */
@Injectable()
export class EventPublisher {
  private readonly outbox: EntitySql<OutboxEvent>;
  private readonly insert: string;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly catalogue: EventCatalogue,
  ) {
    this.outbox = new EntitySql(dataSource, OutboxEvent);
    const $ = this.outbox.parameter;
    const postgres = dataSource.options.type === 'postgres';
    const now = postgres ? 'now()' : `strftime('%Y-%m-%d %H:%M:%f', 'now')`;
    // PostgreSQL deduces a parameter's type from its first use; the type is used twice
    const type = postgres ? `${$(2)}::text` : $(2);
    this.insert =
      `INSERT INTO "events" ("id", "type", "payload", "created_at") ` +
      `SELECT ${$(1)}, ${type}, ${$(3)}, ${now} WHERE ${isConsumed(type, postgres)}`;
  }

  /**
   * Writes `payload` as the body of a `definition.type` event, in the transaction the caller
   * runs in (`@Transactional()`, `DataSource.transaction`); outside one it refuses, since the event could then be
   * published for a change that is rolled back. int64 values keep every digit.
   */
  async publish<Payload extends object>(
    definition: EventDefinition<Payload>,
    payload: Payload,
  ): Promise<void> {
    if (!this.catalogue.has(definition.type)) {
      throw new Error(
        `${definition.type} was published without being declared: import EventsModule.forFeature([...]) with it in its module, so that subscribers can ask for it (docs/conventions.md, "Events")`,
      );
    }
    if (!transactionRunnerOf(this.dataSource)) {
      throw new Error(
        `${definition.type} was published outside a transaction: publish from a method marked @Transactional(), so that the event is committed with its change (docs/conventions.md, "Events")`,
      );
    }
    await this.outbox.execute(this.insert, [
      `evt_${randomUUID().replaceAll('-', '')}`,
      definition.type,
      stringifyLosslessJson(payload),
    ]);
  }
}
