import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import {
  BadRequestException,
  ConflictException,
  HttpStatus,
  Injectable,
  type RawBodyRequest,
} from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { Response } from 'express';
import type { AdmittedRequest } from '../auth/bearer.guard';
import { HttpErrorWithHeaders } from '../common/errors/http-error-with-headers';
import {
  toErrorAnswer,
  type ErrorAnswer,
} from '../common/errors/error-answers';
import { JsonText, stringifyLosslessJson } from '../common/json/lossless-json';
import type { PortableDataSource } from '../database/portable-data-source';
import {
  ClosingUpdateChangedNothing,
  type IsolationLevel,
} from '../database/transaction-context';
import {
  fingerprintOf,
  IDEMPOTENCY_KEY_HEADER,
  idempotencyKeyOf,
} from './idempotency-key';
import {
  IdempotencyStore,
  recordedAnswer,
  type KeyedRequest,
} from './idempotency.store';

/** The header that marks an answer as the stored answer of an earlier request. */
export const REPLAYED_HEADER = 'Idempotent-Replayed';

export interface IdempotentOptions {
  /**
   * The isolation level of the transaction the request runs in with a key (PostgreSQL); the
   * transactions of its service join it. Unless said, the level of the first of those
   * (`@Transactional()`'s SERIALIZABLE, `@LockingTransaction()`'s READ COMMITTED), and
   * SERIALIZABLE when the handler opens none.
   */
  isolation?: IsolationLevel;
}

/** What a repeat is told while the first request with its key still runs. */
export const IN_FLIGHT_MESSAGE = `a request with this ${IDEMPOTENCY_KEY_HEADER} is still being processed; send it again after Retry-After seconds to get its answer`;

/** What a request is told whose key was used for another request. */
export const KEY_REUSED_MESSAGE = `this ${IDEMPOTENCY_KEY_HEADER} was already used for another request (another method, path or body); send a new key with a new request`;

/** What an attempt is told that ran past its lease and was taken over by a repeat. */
export const TAKEN_OVER_MESSAGE = `a repeat of this request took its ${IDEMPOTENCY_KEY_HEADER} over after the key's lease ran out, and nothing was changed by this one; the repeat's answer is the one that counts`;

/** A repeat's hint: the first request is likely done by then (IDEMPOTENCY_LEASE bounds a dead one). */
export const IN_FLIGHT_RETRY_AFTER_SECONDS = 1;

/** A request an `@Idempotent()` handler is called for: admitted, its body kept as sent; it may carry a key. */
export type KeyableRequest = RawBodyRequest<AdmittedRequest>;

/**
 * Runs the handlers of `@Idempotent()` routes (idempotent.decorator.ts) with an
 * `Idempotency-Key` (docs/decisions.md, "Idempotency keys"): the first request with a key runs
 * in one transaction with the storing of its answer, so its change and its answer are committed
 * together or not at all; a repeat gets that answer, byte for byte, with
 * `Idempotent-Replayed: true`. Without the header the handler is called as it is.
 */
@Injectable()
export class IdempotencyRunner {
  constructor(
    private readonly store: IdempotencyStore,
    @InjectDataSource() private readonly dataSource: PortableDataSource,
  ) {}

  run(
    request: KeyableRequest,
    isolation: IsolationLevel | undefined,
    handle: () => unknown,
  ): unknown {
    const key = idempotencyKeyOf(request);
    if (key === undefined) return handle();
    const bearer = request.bearer;
    if (!bearer) {
      throw new Error(
        `@Idempotent() keys are kept per caller, so ${request.method} ${request.path} must require a token (@RequireScopes)`,
      );
    }
    const keyed: KeyedRequest = {
      caller: storedCaller(bearer.caller),
      key,
      fingerprint: fingerprintOf(request),
    };
    return this.answer(keyed, isolation, request, handle);
  }

  private async answer(
    keyed: KeyedRequest,
    isolation: IsolationLevel | undefined,
    request: KeyableRequest,
    handle: () => unknown,
  ): Promise<JsonText> {
    const claim = await this.store.claim(keyed);
    switch (claim.outcome) {
      case 'replay':
        return claim.answer.with({ [REPLAYED_HEADER]: 'true' });
      case 'mismatch':
        throw new BadRequestException(KEY_REUSED_MESSAGE);
      case 'in-flight':
        throw new HttpErrorWithHeaders(HttpStatus.CONFLICT, IN_FLIGHT_MESSAGE, {
          'Retry-After': String(IN_FLIGHT_RETRY_AFTER_SECONDS),
        });
    }
    const { leaseId } = claim;
    try {
      const inTransaction = <T>(work: () => Promise<T>) =>
        isolation === undefined
          ? this.dataSource.adoptingTransaction('SERIALIZABLE', work)
          : this.dataSource.transaction(isolation, work);
      return await inTransaction(async () => {
        const result: unknown = await keyedRequests.run(keyed, handle);
        const response = request.res as Response;
        const answer = recordedAnswer(
          // Nest sets the route's status (201, or its @HttpCode) before calling the handler
          response.statusCode,
          {
            ...answerHeadersOf(response),
            ...(result instanceof JsonText && result.headers),
          },
          stringifyLosslessJson(result),
        );
        this.store.recordAtCommit(keyed, leaseId, answer);
        return answer;
      });
    } catch (error) {
      if (error instanceof ClosingUpdateChangedNothing) {
        // a repeat took the key over after this attempt's lease ran out: the repeat's answer counts
        throw new ConflictException(TAKEN_OVER_MESSAGE);
      }
      await this.keepOrFree(
        keyed,
        leaseId,
        toErrorAnswer(error, request.method),
      );
      throw error;
    }
  }

  /**
   * A refusal (4xx) is the request's answer, kept like a success: the request was not done,
   * and its repeat is told so again. A 429 or a 5xx is no answer to the request: its key is
   * freed, so that a repeat runs it anew. A database too far gone to take either leaves the
   * key to its lease.
   */
  private async keepOrFree(
    request: KeyedRequest,
    leaseId: string,
    { body, headers }: ErrorAnswer,
  ): Promise<void> {
    const kept =
      body.error < 500 && body.error !== Number(HttpStatus.TOO_MANY_REQUESTS);
    try {
      if (kept) {
        await this.store.record(
          request,
          leaseId,
          recordedAnswer(body.error, headers, stringifyLosslessJson(body)),
        );
      } else {
        await this.store.release(request, leaseId);
      }
    } catch {
      // the lease runs out on its own (IDEMPOTENCY_LEASE)
    }
  }
}

/**
 * The headers a handler sets that belong to its answer, and come again with a repeat: where
 * the created resource is, and the version of the body it answers. The service's own (request
 * id, rate limits, security headers) are the repeat's own.
 */
const ANSWER_HEADERS = ['Location', 'Content-Location', 'ETag'];

function answerHeadersOf(response: Response): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const name of ANSWER_HEADERS) {
    const value = response.getHeader(name);
    if (typeof value === 'string') headers[name] = value;
  }
  return headers;
}

/** The keyed request a handler runs for, while it runs. */
const keyedRequests = new AsyncLocalStorage<KeyedRequest>();

/**
 * The caller and key of the request the calling handler runs for, when it was sent with an
 * Idempotency-Key: its stored answer can then be found again, to erase a secret it holds
 * (IdempotencyStore.erase).
 */
export function currentIdempotencyKey():
  | { caller: string; key: string }
  | undefined {
  const keyed = keyedRequests.getStore();
  return keyed && { caller: keyed.caller, key: keyed.key };
}

/** How long a caller the `caller` column holds may be (idempotent-request.entity.ts). */
export const MAX_STORED_CALLER = 80;

/**
 * The caller as its keys are stored: itself, or, past MAX_STORED_CALLER (an identity
 * provider's issuer URL and subject can make 120 characters and more), `sha256:` and its
 * digest, which no caller of the service's own forms (`token:`, `jwt:`) can be.
 */
export function storedCaller(caller: string): string {
  return caller.length <= MAX_STORED_CALLER
    ? caller
    : `sha256:${createHash('sha256').update(caller).digest('base64url')}`;
}
