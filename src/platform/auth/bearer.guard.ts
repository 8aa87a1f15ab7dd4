import {
  CanActivate,
  ExecutionContext,
  HttpStatus,
  Injectable,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { HttpErrorWithHeaders } from '../common/errors/http-error-with-headers';
import { AUTH_MESSAGES, lacksScopesMessage } from './auth-messages';
import { IS_PUBLIC_KEY } from './decorators/public.decorator';
import { REQUIRED_SCOPES_KEY } from './decorators/require-scopes.decorator';
import type { Unauthenticated } from './bearer';
import type { AdmittedRequest } from './request-admission.service';
import type { Scope } from './scopes';
import { Metrics } from '../metrics/metrics';

const REALM = 'realm="plant-store"';

/** A request RequestAdmissionService never saw is no better than one whose token it rejected. */
const NOT_ADMITTED: Unauthenticated = {
  reason: 'rejected',
  message: AUTH_MESSAGES.rejectedToken,
};

interface RouteAccess {
  isPublic: boolean;
  required: readonly Scope[] | undefined;
}

/**
 * Denies by default: every route needs a live bearer token unless marked @Public(), and the
 * token must hold the scopes of @RequireScopes(); a route that declares neither admits no
 * token at all (RouteAccessCheckService stops such an app from booting). The token was proven, or
 * refused, by RequestAdmissionService before routing: the guard reads its verdict and never the
 * header. Answers follow RFC 6750.
 */
@Injectable()
export class BearerGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly metrics: Metrics,
  ) {}

  /** Each route's access, read from its decorators once: they do not change after boot. */
  private readonly routes = new WeakMap<object, WeakMap<object, RouteAccess>>();

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
}
