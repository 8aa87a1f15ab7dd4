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

  constructor(@InjectDataSource() dataSource: DataSource) {
    this.sql = new EntitySql(dataSource, WebhookDelivery);
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
        this.sql.stored('claimedUntil', until),
        this.sql.stored('claimedUntil', now),
        ...deliveries.flatMap(({ id, attempts }) => [id, attempts]),
      ],
    );
    return new Set(claimed.map(({ id }) => id));
  }
}
