import {
  CanActivate,
  ExecutionContext,
  HttpStatus,
  Injectable,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { NextFunction, Request, Response } from 'express';
import { HttpErrorWithHeaders } from '../common/errors/http-error-with-headers';
import { HEALTH_PROBE_PATHS } from '../health/health-probes';
import { TOKEN_PREFIX } from '../http/token-format';
import { Metrics } from '../metrics/metrics';
import { clientKeyOf } from '../rate-limit/client-key';
import { RateLimiter } from '../rate-limit/rate-limiter';
import { AUTH_MESSAGES, lacksScopesMessage } from './auth-messages';
import { TokenRejection, type Bearer, type Unauthenticated } from './bearer';
import { IS_PUBLIC_KEY } from './decorators/public.decorator';
import { REQUIRED_SCOPES_KEY } from './decorators/require-scopes.decorator';
import { IdentityProviderTokensService } from './oidc/identity-provider-tokens.service';
import type { Scope } from './scopes';
import { TokensService } from './tokens.service';

const REALM = 'realm="plant-store"';

/** `Authorization: Bearer <token>`, the scheme in any case (RFC 7235). */
const BEARER_CREDENTIALS = /^Bearer +(\S+) *$/i;

/** `Authorization: Bearer` with nothing after it, or only white space. */
const EMPTY_BEARER_CREDENTIALS = /^Bearer\s*$/i;

const MISSING: Unauthenticated = {
  reason: 'missing',
  message: AUTH_MESSAGES.missingToken,
};
// an unset shell variable, mostly
const EMPTY: Unauthenticated = {
  reason: 'empty',
  message: AUTH_MESSAGES.emptyToken,
};
const NOT_BEARER: Unauthenticated = {
  reason: 'not_bearer',
  message: AUTH_MESSAGES.notBearer,
};
/** A request `admit` never saw is no better than one whose token it rejected. */
const NOT_ADMITTED: Unauthenticated = {
  reason: 'rejected',
  message: AUTH_MESSAGES.rejectedToken,
};
const UNKNOWN_TOKEN = new TokenRejection(AUTH_MESSAGES.rejectedToken);

/** The bearer token a request presents, or undefined when it presents none. */
export function bearerTokenOf(request: Request): string | undefined {
  return BEARER_CREDENTIALS.exec(request.headers.authorization ?? '')?.[1];
}

/** Why a request presents no bearer token: no Authorization, an empty one, another scheme. */
export function absentTokenOf(request: Request): Unauthenticated {
  const { authorization } = request.headers;
  if (authorization === undefined) return MISSING;
  return EMPTY_BEARER_CREDENTIALS.test(authorization) ? EMPTY : NOT_BEARER;
}

/** A request as `admit` leaves it for `canActivate`. */
export interface AdmittedRequest extends Request {
  /** Who the live token the request presented speaks for; undefined when none was proven. */
  bearer?: Bearer;
  /**
   * Why it has no caller: it presented no token, or one that is unknown, revoked, expired or
   * an access token that fails its checks. The 401 a route that needs a token answers.
   */
  unauthenticated?: Unauthenticated;
}

interface RouteAccess {
  isPublic: boolean;
  required: readonly Scope[] | undefined;
}

/**
 * The bearer scheme (RFC 6750), in one place, in two steps:
 *
 * - **`admit`, before routing**: the express middleware setup-app.ts installs first, for every
 *   request but the health probes, so that unknown paths, the docs and the OpenAPI document
 *   are limited like any route:
 *   1. an address blocked for guessing tokens gets 429 for any request with a token, before
 *      the token store is touched;
 *   2. a presented token is proven (or counted as a rejected guess) once: a `pst_` token in
 *      the token store, any other as an identity provider's access token when OIDC_ISSUER is
 *      set;
 *   3. the request is charged to its proven token, or else to its client address: a token
 *      that is not proven never chooses the counter.
 * - **`canActivate`, after routing** (the first global guard, app.module.ts): denies by
 *   default. Every route needs a live token unless marked @Public(), and the token must hold
 *   the scopes of @RequireScopes(); a route that declares neither admits no token at all
 *   (RouteAccessCheckService stops such an app from booting). It reads what `admit` proved,
 *   never the header.
 *
 * No body has been read by then (JsonBodyGuard, the last global guard, reads it).
 */
@Injectable()
export class BearerGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly metrics: Metrics,
    private readonly tokens: TokensService,
    private readonly identityProvider: IdentityProviderTokensService,
    private readonly limiter: RateLimiter,
  ) {}

  /** Each route's access, read from its decorators once: they do not change after boot. */
  private readonly routes = new WeakMap<object, WeakMap<object, RouteAccess>>();

  /** Express middleware, installed in setup-app.ts before any route. */
  readonly admit = (
    request: AdmittedRequest,
    response: Response,
    next: NextFunction,
  ): void => {
    // probes as orchestrators send them; any other method there is counted like any request
    if (
      HEALTH_PROBE_PATHS.has(request.path) &&
      (request.method === 'GET' || request.method === 'HEAD')
    ) {
      return next();
    }
    this.admitted(request, response).then(() => next(), next);
  };

  canActivate(context: ExecutionContext): boolean {
    const { isPublic, required } = this.accessOf(context);
    if (isPublic) return true;
    const { bearer: token, unauthenticated = NOT_ADMITTED } = context
      .switchToHttp()
      .getRequest<AdmittedRequest>();
    if (!token) {
      const { reason, message } = unauthenticated;
      this.metrics.authenticationFailures.inc({ reason });
      throw new HttpErrorWithHeaders(HttpStatus.UNAUTHORIZED, message, {
        'WWW-Authenticate':
          reason === 'rejected'
            ? `Bearer ${REALM}, error="invalid_token"`
            : `Bearer ${REALM}`,
      });
    }
    if (!required || required.length === 0) {
      this.metrics.authenticationFailures.inc({ reason: 'insufficient_scope' });
      throw new HttpErrorWithHeaders(
        HttpStatus.FORBIDDEN,
        'this operation declares no access, so no token may call it',
        {},
      );
    }
    const missing = required.filter((scope) => !token.scopes.includes(scope));
    if (missing.length > 0) {
      this.metrics.authenticationFailures.inc({ reason: 'insufficient_scope' });
      throw new HttpErrorWithHeaders(
        HttpStatus.FORBIDDEN,
        lacksScopesMessage(missing),
        {
          'WWW-Authenticate': `Bearer ${REALM}, error="insufficient_scope", scope="${missing.join(' ')}"`,
        },
      );
    }
    return true;
  }

  private async admitted(
    request: AdmittedRequest,
    response: Response,
  ): Promise<void> {
    const address = clientKeyOf(request.ip ?? '');
    const presented = bearerTokenOf(request);
    if (presented === undefined) {
      request.unauthenticated = absentTokenOf(request);
      return this.limiter.chargeRequest(response, { address });
    }
    await this.limiter.refuseBlockedAddress(address);
    const bearer = await this.bearerOf(presented);
    if (bearer instanceof TokenRejection) {
      request.unauthenticated = { reason: 'rejected', message: bearer.message };
      if (bearer.isGuess) await this.limiter.countRejectedToken(address);
      return this.limiter.chargeRequest(response, { address });
    }
    request.bearer = bearer;
    return this.limiter.chargeRequest(response, { caller: bearer.caller });
  }

  /** The caller a token speaks for, or why it is refused. */
  private async bearerOf(presented: string): Promise<Bearer | TokenRejection> {
    // a token of ours is never parsed as a JWT, whatever else is configured
    if (this.identityProvider.enabled && !presented.startsWith(TOKEN_PREFIX)) {
      return this.identityProvider.verify(presented);
    }
    const token = await this.tokens.authenticate(presented);
    return token
      ? { caller: `token:${token.id}`, scopes: token.scopes }
      : UNKNOWN_TOKEN;
  }

  private accessOf(context: ExecutionContext): RouteAccess {
    const handler = context.getHandler();
    const controller = context.getClass();
    let byController = this.routes.get(handler);
    if (byController === undefined) {
      byController = new WeakMap();
      this.routes.set(handler, byController);
    }
    let access = byController.get(controller);
    if (access === undefined) {
      const targets = [handler, controller];
      access = {
        isPublic:
          this.reflector.getAllAndOverride<boolean>(IS_PUBLIC_KEY, targets) ??
          false,
        required: this.reflector.getAllAndOverride<Scope[] | undefined>(
          REQUIRED_SCOPES_KEY,
          targets,
        ),
      };
      byController.set(controller, access);
    }
    return access;
  }
}
