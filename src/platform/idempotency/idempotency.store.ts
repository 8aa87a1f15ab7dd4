import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import {
  idempotencySettings,
  type IdempotencySettings,
} from './idempotency.settings';
import { DatabaseClockService } from '../database/database-clock.service';
import { EntitySql } from '../database/entity-sql';
import { IdempotentRequest } from './idempotent-request.entity';
import { JsonText } from '../common/json/lossless-json';

/** Claims of a key that keeps being freed under it, before its request is told to retry. */
const CLAIM_ATTEMPTS = 3;

/**
 * An answer recorded in full, status, headers and JSON text, written as it is by the one JSON
 * writer: what a request with an `Idempotency-Key` stores, so that the first answer and every
 * repeat of it are the same bytes.
 */
export interface RecordedAnswer extends JsonText {
  readonly status: number;
  /** Headers of the answer itself (`Location`, `Retry-After` of an error), not the service's own. */
  readonly headers: Readonly<Record<string, string>>;
}

export function recordedAnswer(
  status: number,
  headers: Readonly<Record<string, string>>,
  text: string,
): RecordedAnswer {
  return new JsonText(text, headers, status) as RecordedAnswer;
}

/** A request with a key: whose, which key, and what it asks. */
export interface KeyedRequest {
  caller: string;
  key: string;
  fingerprint: string;
}

/** What a request with a key is to do, from what its key holds. */
export type Claim =
  /** Run it: the key is leased to this attempt (`leaseId`) until it is answered. */
  | { outcome: 'run'; leaseId: string }
  /** Answer with what the first request was answered. */
  | { outcome: 'replay'; answer: RecordedAnswer }
  /** The key was used for another request (another method, path or body). */
  | { outcome: 'mismatch' }
  /** A request with this key runs now, and its lease has not run out. */
  | { outcome: 'in-flight' };

/**
 * The keys and their answers in the database, where every instance meets them. Each step is
 * one statement, so the database decides between concurrent requests with one key: exactly
 * one gets the lease, and an answer is stored only under the lease it was run with.
 */
@Injectable()
export class IdempotencyStore {
  private readonly keys: EntitySql<IdempotentRequest>;
  private readonly claimStatement: string;
  private readonly recordStatement: string;
  private readonly releaseStatement: string;
  private readonly replaceStatement: string;
  private readonly findStatement: string;
  private readonly sweepStatement: string;

  constructor(
    @InjectDataSource() dataSource: DataSource,
    @Inject(idempotencySettings.KEY)
    private readonly settings: IdempotencySettings,
    private readonly clock: DatabaseClockService,
  ) {
    this.keys = new EntitySql(dataSource, IdempotentRequest);
    const $ = this.keys.parameter;
    const row = `"caller" = ${$(1)} AND "idempotency_key" = ${$(2)}`;
    const current = (column: string) => `"idempotency_keys"."${column}"`;
    // a key is free once expired, and taken over once the lease of an unanswered attempt at
    // the same request ran out; $6 is now
    this.claimStatement =
      `INSERT INTO "idempotency_keys" ("caller", "idempotency_key", "fingerprint", "lease_id", ` +
      `"lease_expires_at", "status", "headers", "body", "created_at", "expires_at") ` +
      `VALUES (${$(1)}, ${$(2)}, ${$(3)}, ${$(4)}, ${$(5)}, NULL, NULL, NULL, ${$(6)}, ${$(7)}) ` +
      `ON CONFLICT ("caller", "idempotency_key") DO UPDATE SET ` +
      `"fingerprint" = excluded."fingerprint", "lease_id" = excluded."lease_id", ` +
      `"lease_expires_at" = excluded."lease_expires_at", "status" = NULL, "headers" = NULL, ` +
      `"body" = NULL, "created_at" = excluded."created_at", "expires_at" = excluded."expires_at" ` +
      `WHERE ${current('expires_at')} <= ${$(6)} OR (${current('status')} IS NULL ` +
      `AND ${current('lease_expires_at')} <= ${$(6)} AND ${current('fingerprint')} = excluded."fingerprint")`;
    this.findStatement = `SELECT ${this.keys.columns} FROM "idempotency_keys" WHERE ${row}`;
    this.recordStatement =
      `UPDATE "idempotency_keys" SET "status" = ${$(4)}, "headers" = ${$(5)}, "body" = ${$(6)}, ` +
      `"lease_id" = NULL, "lease_expires_at" = NULL WHERE ${row} AND "lease_id" = ${$(3)}`;
    this.releaseStatement = `DELETE FROM "idempotency_keys" WHERE ${row} AND "lease_id" = ${$(3)}`;
    this.replaceStatement =
      `UPDATE "idempotency_keys" SET "status" = ${$(3)}, "headers" = '{}', "body" = ${$(4)} ` +
      `WHERE ${row} AND "status" IS NOT NULL`;
    this.sweepStatement =
      `DELETE FROM "idempotency_keys" WHERE ("caller", "idempotency_key") IN ` +
      `(SELECT "caller", "idempotency_key" FROM "idempotency_keys" WHERE "expires_at" <= ${$(1)} ` +
      `AND ("lease_expires_at" IS NULL OR "lease_expires_at" <= ${$(1)}) ` +
      `ORDER BY "expires_at" LIMIT ${$(2)})`;
  }

  /** Leases the key to this attempt, or says why not. */
  async claim(request: KeyedRequest, now = this.clock.date()): Promise<Claim> {
    const { IDEMPOTENCY_TTL: ttlMs, IDEMPOTENCY_LEASE: leaseMs } =
      this.settings;
    const at = (ms: number) => this.keys.stored('createdAt', new Date(ms));
    // a key freed between the two statements (swept, released) is claimed again
    for (let attempt = 1; attempt <= CLAIM_ATTEMPTS; attempt += 1) {
      const leaseId = randomUUID();
      const claimed = await this.keys.execute(this.claimStatement, [
        request.caller,
        request.key,
        request.fingerprint,
        leaseId,
        at(now.getTime() + leaseMs),
        at(now.getTime()),
        at(now.getTime() + ttlMs),
      ]);
      if (claimed === 1) return { outcome: 'run', leaseId };
      const held = await this.keys.selectOne(this.findStatement, [
        request.caller,
        request.key,
      ]);
      if (held === undefined || held.expiresAt <= now) continue;
      if (held.fingerprint !== request.fingerprint) {
        return { outcome: 'mismatch' };
      }
      if (held.status === null) return { outcome: 'in-flight' };
      return {
        outcome: 'replay',
        answer: recordedAnswer(
          held.status,
          JSON.parse(held.headers ?? '{}') as Record<string, string>,
          held.body ?? '',
        ),
      };
    }
    return { outcome: 'in-flight' };
  }

  /**
   * Stores the answer of a request that succeeded as the last statement of the transaction it
   * ran in, so that its change and its answer are committed together, and only while the
   * attempt holds the key's lease: once a repeat took the key over (after the lease ran out),
   * the transaction rolls back and fails with ClosingUpdateChangedNothing. On PostgreSQL the
   * answer goes out with COMMIT, in one round trip (EntitySql.closeTransactionWith).
   */
  recordAtCommit(
    request: KeyedRequest,
    leaseId: string,
    answer: RecordedAnswer,
  ): void {
    this.keys.closeTransactionWith(
      this.recordStatement,
      this.recordParameters(request, leaseId, answer),
    );
  }

  /**
   * Stores the answer under the attempt's lease, on its own: a refusal's, whose request changed
   * nothing. Nothing is stored once the lease is no longer this attempt's.
   */
  async record(
    request: KeyedRequest,
    leaseId: string,
    answer: RecordedAnswer,
  ): Promise<void> {
    await this.keys.execute(
      this.recordStatement,
      this.recordParameters(request, leaseId, answer),
    );
  }

  private recordParameters(
    request: KeyedRequest,
    leaseId: string,
    answer: RecordedAnswer,
  ): unknown[] {
    return [
      request.caller,
      request.key,
      leaseId,
      answer.status,
      JSON.stringify(answer.headers),
      answer.text,
    ];
  }

  /**
   * Replaces the answer stored under a key (currentIdempotencyKey) with a refusal that repeats
   * get from then on: for an answer that must not be shown again, such as a secret that was
   * erased since. Nothing changes for a key whose request has not been answered yet.
   */
  async replaceAnswer(
    { caller, key }: { caller: string; key: string },
    status: number,
    message: string,
  ): Promise<void> {
    await this.keys.execute(this.replaceStatement, [
      caller,
      key,
      status,
      JSON.stringify({ error: status, message }),
    ]);
  }

  /** Frees the key of an attempt whose answer is not kept (5xx, 429): a repeat runs anew. */
  async release(request: KeyedRequest, leaseId: string): Promise<void> {
    await this.keys.execute(this.releaseStatement, [
      request.caller,
      request.key,
      leaseId,
    ]);
  }

  /** Deletes at most `limit` keys expired at `now`, oldest first; says how many. */
  sweep(now: Date, limit: number): Promise<number> {
    return this.keys.execute(this.sweepStatement, [
      this.keys.stored('expiresAt', now),
      limit,
    ]);
  }
}
