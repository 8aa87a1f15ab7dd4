import type { EntitySql } from '../../platform/database';
import type { ClaimedDelivery, Settlement } from './delivery-store';
import type { WebhookDelivery } from './webhook-delivery.entity';

/** Settlements written by one statement at most (7 parameters each). */
export const SETTLE_BATCH = 500;

/**
 * The outcomes of attempts, recorded where each claim is still the caller's own, many in one
 * statement (SqlDeliveryStore.settle).
 */
export class SettlementBatches {
  constructor(
    private readonly deliveries: EntitySql<WebhookDelivery>,
    private readonly postgres: boolean,
  ) {}

  /**
   * Settlements are written together: those asked for while one statement of them runs wait
   * for it and go in the next, SETTLE_BATCH at most a statement. A receiver answering quickly
   * under load then costs a statement per batch, not one per delivery.
   */
  settle(delivery: ClaimedDelivery, settlement: Settlement): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.settling.push({ delivery, settlement, resolve, reject });
      if (!this.writingSettlements) void this.writeSettlements();
    });
  }

  private readonly settling: {
    delivery: ClaimedDelivery;
    settlement: Settlement;
    resolve: (own: boolean) => void;
    reject: (error: unknown) => void;
  }[] = [];

  private writingSettlements = false;

  private async writeSettlements(): Promise<void> {
    this.writingSettlements = true;
    while (this.settling.length > 0) {
      const batch = this.settling.splice(0, SETTLE_BATCH);
      try {
        const own = await this.settleAll(batch);
        for (const { delivery, resolve } of batch)
          resolve(own.has(delivery.id));
      } catch (error) {
        for (const { reject } of batch) reject(error);
      }
    }
    this.writingSettlements = false;
  }

  /** Each delivery's outcome, where its claim is still the caller's own: the ids it was. */
  private async settleAll(
    batch: readonly { delivery: ClaimedDelivery; settlement: Settlement }[],
  ): Promise<Set<string>> {
    const $ = this.deliveries.parameter;
    // PostgreSQL types a VALUES list's parameters as text unless told
    const cast = (placeholder: string, type: string) =>
      this.postgres ? `CAST(${placeholder} AS ${type})` : placeholder;
    const rows = batch.map((_item, index) => {
      const at = (offset: number) => $(7 * index + offset);
      return (
        `(${at(1)}, ${at(2)}, ${at(3)}, ${cast(at(4), 'timestamptz')}, ` +
        `${cast(at(5), 'timestamptz')}, ${cast(at(6), 'integer')}, ${at(7)})`
      );
    });
    const settled = await this.deliveries.select(
      `WITH "outcome" ("delivery_id", "token", "new_status", "due_at", "attempted_at", "status_code", "error") ` +
        `AS (VALUES ${rows.join(', ')}) ` +
        `UPDATE "webhook_deliveries" SET "status" = "outcome"."new_status", "next_attempt_at" = "outcome"."due_at", ` +
        `"last_attempt_at" = "outcome"."attempted_at", "last_status_code" = "outcome"."status_code", ` +
        `"last_error" = "outcome"."error", "claimed_until" = NULL, "claim_token" = NULL FROM "outcome" ` +
        `WHERE "id" = "outcome"."delivery_id" AND "claim_token" = "outcome"."token" AND "status" = 'pending' ` +
        `RETURNING "id"`,
      batch.flatMap(({ delivery, settlement }) => [
        delivery.id,
        delivery.token,
        settlement.status,
        this.deliveries.stored('nextAttemptAt', settlement.nextAttemptAt),
        this.deliveries.stored('lastAttemptAt', settlement.lastAttemptAt),
        settlement.lastStatusCode,
        settlement.lastError,
      ]),
    );
    return new Set(settled.map(({ id }) => id));
  }
}
