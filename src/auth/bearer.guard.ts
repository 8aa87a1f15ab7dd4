import {
  CanActivate,
  ExecutionContext,
  HttpStatus,
  Inject,
  Injectable,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { getStorageToken, type ThrottlerStorage } from '@nestjs/throttler';
import type { Request } from 'express';
import { HttpErrorWithHeaders } from '../common/errors/http-error-with-headers';
import { bearerTokenOf } from '../common/http/bearer-token';
import { tooManyRequests } from '../common/rate-limit/rate-limit.guard';
import { appConfig, type AppConfig } from '../config/app.config';
import { IS_PUBLIC_KEY } from './decorators/public.decorator';
import { REQUIRED_SCOPES_KEY } from './decorators/require-scopes.decorator';
import type { Scope } from './scopes';
import { TokensService } from './tokens.service';

const REALM = 'realm="plant-store"';

/**
 * Denies by default: every route needs a live bearer token unless marked @Public(), and the
 * token must hold the scopes of @RequireScopes(); a route that declares neither admits no
 * token at all (RouteAccessCheck stops such an app from booting). Answers follow RFC 6750.
 */
@Injectable()
export class BearerGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly tokens: TokensService,
    @Inject(getStorageToken()) private readonly counters: ThrottlerStorage,
    @Inject(appConfig.KEY) private readonly config: AppConfig,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, targets)) {
      return true;
    }
    const request = context.switchToHttp().getRequest<Request>();
    const header = request.headers.authorization;
    if (header === undefined) {
      throw unauthorized(
        'missing bearer token: send Authorization: Bearer <token>',
        `Bearer ${REALM}`,
      );
    }
    const presented = bearerTokenOf(request);
    if (presented === undefined) {
      throw unauthorized(
        'the Authorization header must use the Bearer scheme: Authorization: Bearer <token>',
        `Bearer ${REALM}`,
      );
    }
    const token = await this.tokens.authenticate(presented);
    if (!token) {
      await this.countRejectedToken(request);
      throw unauthorized(
        'the bearer token is unknown, revoked or expired',
        `Bearer ${REALM}, error="invalid_token"`,
      );
    }
    const required = this.reflector.getAllAndOverride<Scope[] | undefined>(
      REQUIRED_SCOPES_KEY,
      targets,
    );
    if (!required || required.length === 0) {
      throw new HttpErrorWithHeaders(
        HttpStatus.FORBIDDEN,
        'this operation declares no access, so no token may call it',
        {},
      );
    }
    const missing = required.filter((scope) => !token.scopes.includes(scope));
    if (missing.length > 0) {
      throw new HttpErrorWithHeaders(
        HttpStatus.FORBIDDEN,
        `the bearer token lacks the scope ${missing.join(' ')}`,
        {
          'WWW-Authenticate': `Bearer ${REALM}, error="insufficient_scope", scope="${missing.join(' ')}"`,
        },
      );
    }
    return true;
  }

  /**
   * Guessing tokens from one address meets a much lower limit than using one: past it, the
   * address gets 429 for every further wrong token, and learns nothing more.
   */
  private async countRejectedToken(request: Request): Promise<void> {
    const { badTokens, windowMs, badTokenBlockMs } = this.config.rateLimit;
    const { isBlocked, timeToBlockExpire } = await this.counters
      .increment(
        `rejected-tokens:${request.ip}`,
        windowMs,
        badTokens,
        badTokenBlockMs,
        'rejected-tokens',
      )
      // the counters' store (Redis) is away: the 401 stands on its own
      .catch(() => ({ isBlocked: false, timeToBlockExpire: 0 }));
    if (isBlocked) {
      throw tooManyRequests(
        timeToBlockExpire,
        'rejected tokens from this address',
      );
    }
  }
}

function unauthorized(message: string, challenge: string) {
  return new HttpErrorWithHeaders(HttpStatus.UNAUTHORIZED, message, {
    'WWW-Authenticate': challenge,
  });
}
