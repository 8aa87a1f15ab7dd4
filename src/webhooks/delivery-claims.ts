import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EntitySql } from '../database/entity-sql';
import { WebhookDelivery } from './webhook-delivery.entity';

/**
 * The dispatcher's claims: due deliveries taken for this instance, all of one poll in one
 * statement (one round trip on PostgreSQL, however many). Of several instances that saw a row
 * due, the database lets one update win; the others skip it. A row must still be as it was
 * read: due, unclaimed, and at the attempt count read, so an instance that read it before
 * another recorded a failed attempt cannot send that attempt a second time.
 */
@Injectable()
export class DeliveryClaims {
  private readonly sql: EntitySql<WebhookDelivery>;
  private readonly instant: (date: Date) => unknown;

  constructor(@InjectDataSource() dataSource: DataSource) {
    this.sql = new EntitySql(dataSource, WebhookDelivery);
    const column = dataSource
      .getMetadata(WebhookDelivery)
      .findColumnWithPropertyName('claimedUntil')!;
    // as the engine stores an instant: text on SQLite, compared as text
    this.instant = (date) =>
      dataSource.driver.preparePersistentValue(date, column);
  }

  /** The ids of `deliveries` that this instance now holds until `until`. */
  async claim(
    deliveries: readonly WebhookDelivery[],
    now: Date,
    until: Date,
  ): Promise<Set<string>> {
    if (deliveries.length === 0) return new Set();
    const $ = this.sql.parameter;
    const asRead = deliveries
      .map(
        (_delivery, index) =>
          `("id" = ${$(3 + 2 * index)} AND "attempts" = ${$(4 + 2 * index)})`,
      )
      .join(' OR ');
    const claimed = await this.sql.select(
      `UPDATE "webhook_deliveries" SET "claimed_until" = ${$(1)} ` +
        `WHERE "status" = 'pending' AND "next_attempt_at" <= ${$(2)} ` +
        `AND ("claimed_until" IS NULL OR "claimed_until" < ${$(2)}) ` +
        `AND (${asRead}) RETURNING "id"`,
      [
        this.instant(until),
        this.instant(now),
        ...deliveries.flatMap(({ id, attempts }) => [id, attempts]),
      ],
    );
    return new Set(claimed.map(({ id }) => id));
  }
}
