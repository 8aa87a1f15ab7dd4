import { HttpStatus, Inject, Injectable } from '@nestjs/common';
import type { Response } from 'express';
import { appConfig, type AppConfig } from '../config/app.config';
import { HttpErrorWithHeaders } from '../common/errors/http-error-with-headers';
import { Metrics } from '../metrics/metrics';
import {
  RateLimitCounters,
  type Count,
  type Counter,
} from './rate-limit-counters';

/** The 429 of every limit, with `Retry-After` in whole seconds. */
export function tooManyRequests(retryAfterMs: number, what: string) {
  const seconds = Math.max(1, Math.ceil(retryAfterMs / 1000));
  return new HttpErrorWithHeaders(
    HttpStatus.TOO_MANY_REQUESTS,
    `too many ${what}; retry after ${seconds} s`,
    { 'Retry-After': String(seconds) },
  );
}

export const REJECTED_TOKENS = 'rejected tokens from this address';

/** Who a request is charged to: the caller of a proven token (Bearer), or else the address it came from. */
export type Payer = { caller: string } | { address: string };

/**
 * The limits of docs/decisions.md, "Rate limits": requests per proven token or per client
 * address, and rejected tokens per address. While the counters are unavailable the limits are
 * not applied: serving unlimited beats refusing everyone.
 */
@Injectable()
export class RateLimiter {
  private readonly perToken: Counter;
  private readonly perAddress: Counter;
  private readonly rejectedTokens: Counter;

  constructor(
    counters: RateLimitCounters,
    @Inject(appConfig.KEY) config: AppConfig,
    private readonly metrics: Metrics,
  ) {
    const { perToken, perAddress, badTokens, windowMs, badTokenBlockMs } =
      config.rateLimit;
    this.perToken = counters.counter({ windowMs, limit: perToken, blockMs: 0 });
    this.perAddress = counters.counter({
      windowMs,
      limit: perAddress,
      blockMs: 0,
    });
    this.rejectedTokens = counters.counter({
      windowMs,
      limit: badTokens,
      blockMs: badTokenBlockMs,
    });
  }

  /**
   * Counts a request against its payer's limit and says so in `RateLimit-*` headers.
   * @throws 429 past the limit
   */
  async chargeRequest(response: Response, payer: Payer): Promise<void> {
    const [counter, key, kind] =
      'caller' in payer
        ? [this.perToken, `requests:${payer.caller}`, 'token']
        : [this.perAddress, `requests:address:${payer.address}`, 'address'];
    const count = await this.tried(counter.hit(key));
    if (!count) return;
    const { limit } = counter;
    response.setHeader('RateLimit-Limit', limit);
    response.setHeader('RateLimit-Remaining', Math.max(0, limit - count.hits));
    response.setHeader('RateLimit-Reset', Math.ceil(count.resetMs / 1000));
    if (count.blockedMs > 0) {
      this.metrics.rateLimitRejections.inc({ limit: kind });
      throw tooManyRequests(count.blockedMs, 'requests');
    }
  }

  /**
   * An address blocked for guessing tokens is refused before its token is looked at.
   * @throws 429 while the address is blocked
   */
  async refuseBlockedAddress(address: string): Promise<void> {
    const blockedMs = await this.tried(
      this.rejectedTokens.blockedFor(rejectedTokensKey(address)),
    );
    if (blockedMs) {
      this.metrics.rateLimitRejections.inc({ limit: 'blocked_address' });
      throw tooManyRequests(blockedMs, REJECTED_TOKENS);
    }
  }

  /**
   * Counts a token that proved to be unknown, revoked or expired.
   * @throws 429 when that takes the address past its limit of rejected tokens
   */
  async countRejectedToken(address: string): Promise<void> {
    const count = await this.tried(
      this.rejectedTokens.hit(rejectedTokensKey(address)),
    );
    if (count && count.blockedMs > 0) {
      this.metrics.rateLimitRejections.inc({ limit: 'rejected_tokens' });
      throw tooManyRequests(count.blockedMs, REJECTED_TOKENS);
    }
  }

  /** The counters' answer, or undefined when they are unavailable (RedisCounters logs it). */
  private async tried<T extends Count | number>(
    answer: Promise<T>,
  ): Promise<T | undefined> {
    try {
      return await answer;
    } catch {
      return undefined;
    }
  }
}

function rejectedTokensKey(address: string): string {
  return `rejected-tokens:${address}`;
}
