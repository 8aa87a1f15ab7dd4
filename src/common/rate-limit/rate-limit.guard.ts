import { HttpStatus, Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  getOptionsToken,
  getStorageToken,
  ThrottlerGuard,
  type ThrottlerModuleOptions,
  type ThrottlerRequest,
  type ThrottlerStorage,
} from '@nestjs/throttler';
import { createHash } from 'node:crypto';
import type { Request, Response } from 'express';
import { appConfig, type AppConfig } from '../../config/app.config';
import { HttpErrorWithHeaders } from '../errors/http-error-with-headers';

const BEARER = /^Bearer +(\S+) *$/i;

export function bearerTokenOf(request: Request): string | undefined {
  return BEARER.exec(request.headers.authorization ?? '')?.[1];
}

/** The 429 of every limiter, with `Retry-After` in seconds. */
export function tooManyRequests(retryAfterSeconds: number, what: string) {
  return new HttpErrorWithHeaders(
    HttpStatus.TOO_MANY_REQUESTS,
    `too many ${what}; retry after ${retryAfterSeconds} s`,
    { 'Retry-After': String(retryAfterSeconds) },
  );
}

/**
 * @nestjs/throttler counting per bearer token, or per client address for requests without one,
 * across all routes, and answering with `RateLimit-Limit`, `RateLimit-Remaining`,
 * `RateLimit-Reset` and, on 429, `Retry-After`. Runs before authentication, so floods are
 * turned away before they reach the token store.
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  constructor(
    @Inject(getOptionsToken()) options: ThrottlerModuleOptions,
    @Inject(getStorageToken()) storage: ThrottlerStorage,
    reflector: Reflector,
    @Inject(appConfig.KEY) private readonly config: AppConfig,
  ) {
    super(options, storage, reflector);
  }

  protected override async handleRequest({
    context,
    ttl,
    throttler,
    blockDuration,
  }: ThrottlerRequest): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const response = context.switchToHttp().getResponse<Response>();
    const token = bearerTokenOf(request);
    const tracker = token
      ? `token:${createHash('sha256').update(token).digest('hex')}`
      : `address:${request.ip}`;
    const limit = token
      ? this.config.rateLimit.perToken
      : this.config.rateLimit.perAddress;
    let counted: Awaited<ReturnType<ThrottlerStorage['increment']>>;
    try {
      counted = await this.storageService.increment(
        `${throttler.name}:${tracker}`,
        ttl,
        limit,
        blockDuration,
        throttler.name ?? 'default',
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
