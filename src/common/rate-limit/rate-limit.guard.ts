import {
  CanActivate,
  ExecutionContext,
  HttpStatus,
  Inject,
  Injectable,
  Logger,
} from '@nestjs/common';
import { getStorageToken, type ThrottlerStorage } from '@nestjs/throttler';
import { hash } from 'node:crypto';
import type { Request, Response } from 'express';
import { appConfig, type AppConfig } from '../../config/app.config';
import { HttpErrorWithHeaders } from '../errors/http-error-with-headers';
import { bearerTokenOf } from '../http/bearer-token';

/** The 429 of every limiter, with `Retry-After` in seconds. */
export function tooManyRequests(retryAfterSeconds: number, what: string) {
  return new HttpErrorWithHeaders(
    HttpStatus.TOO_MANY_REQUESTS,
    `too many ${what}; retry after ${retryAfterSeconds} s`,
    { 'Retry-After': String(retryAfterSeconds) },
  );
}

/**
 * Counts requests in @nestjs/throttler's storage, per bearer token, or per client address for
 * requests without one, across all routes, and answers with `RateLimit-Limit`,
 * `RateLimit-Remaining`, `RateLimit-Reset` and, on 429, `Retry-After`. Runs before
 * authentication, so floods are turned away before they reach the token store. A guard of its
 * own rather than ThrottlerGuard: that one looks up per-route metadata on every request, for
 * options this service does not use (bench/README.md).
 */
@Injectable()
export class RateLimitGuard implements CanActivate {
  private readonly logger = new Logger(RateLimitGuard.name);

  constructor(
    @Inject(getStorageToken()) private readonly storage: ThrottlerStorage,
    @Inject(appConfig.KEY) private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const response = context.switchToHttp().getResponse<Response>();
    const token = bearerTokenOf(request);
    const { perToken, perAddress, windowMs } = this.config.rateLimit;
    const key = token
      ? `requests:token:${hash('sha256', token)}`
      : `requests:address:${request.ip}`;
    const limit = token ? perToken : perAddress;
    let counted: Awaited<ReturnType<ThrottlerStorage['increment']>>;
    try {
      counted = await this.storage.increment(
        key,
        windowMs,
        limit,
        windowMs,
        'requests',
      );
    } catch (error) {
      // the counters' store (Redis) is away: serving unlimited beats refusing everyone
      this.logger.warn(
        error,
        'rate limit not applied: its counters are unavailable',
      );
      return true;
    }
    const { totalHits, timeToExpire, isBlocked, timeToBlockExpire } = counted;
    response.setHeader('RateLimit-Limit', limit);
    response.setHeader('RateLimit-Remaining', Math.max(0, limit - totalHits));
    response.setHeader('RateLimit-Reset', timeToExpire);
    if (isBlocked) throw tooManyRequests(timeToBlockExpire, 'requests');
    return true;
  }
}
