import { Injectable } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { clientKeyOf } from '../rate-limit/client-key';
import { RateLimiter } from '../rate-limit/rate-limiter';
import { HEALTH_PROBE_PATHS } from '../health/health-probes';
import { TOKEN_PREFIX } from '../http/token-format';
import { AUTH_MESSAGES } from './auth-messages';
import { absentTokenOf, bearerTokenOf } from './bearer-token';
import { TokenRejection, type Bearer, type Unauthenticated } from './bearer';
import { IdentityProviderTokensService } from './oidc/identity-provider-tokens.service';
import { TokensService } from './tokens.service';

const UNKNOWN_TOKEN = new TokenRejection(AUTH_MESSAGES.rejectedToken);

/** A request as RequestAdmissionService leaves it for BearerGuard. */
export interface AdmittedRequest extends Request {
  /** Who the live token the request presented speaks for; undefined when none was proven. */
  bearer?: Bearer;
  /**
   * Why it has no caller: it presented no token, or one that is unknown, revoked, expired or
   * an access token that fails its checks. The 401 BearerGuard answers a route that needs one.
   */
  unauthenticated?: Unauthenticated;
}

/**
 * The first word on every request but the health probes, before routing, so that unknown
 * paths, the docs and the OpenAPI document are limited like any route:
 * 1. an address blocked for guessing tokens gets 429 for any request with a token, before the
 *    token store is touched;
 * 2. a presented token is proven (or counted as a rejected guess) once, here: a `pst_` token
 *    in the token store, any other as an identity provider's access token when OIDC_ISSUER is
 *    set;
 * 3. the request is charged to its proven token, or else to its client address: a token that
 *    is not proven never chooses the counter.
 * Which routes need which token is BearerGuard's, after routing; no body has been read yet
 * (JsonBodyGuard, the last global guard, reads it).
 */
@Injectable()
export class RequestAdmissionService {
  constructor(
    private readonly tokens: TokensService,
    private readonly identityProvider: IdentityProviderTokensService,
    private readonly limiter: RateLimiter,
  ) {}

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
}
