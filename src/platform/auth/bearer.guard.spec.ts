import type { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Metrics } from '../metrics/metrics';
import { HttpErrorWithHeaders } from '../common/errors/http-error-with-headers';
import { AUTH_MESSAGES } from './auth-messages';
import type { Bearer } from './bearer';
import {
  absentTokenOf,
  BearerGuard,
  bearerTokenOf,
  type AdmittedRequest,
} from './bearer.guard';
import { IS_PUBLIC_KEY } from './decorators/public.decorator';
import { REQUIRED_SCOPES_KEY } from './decorators/require-scopes.decorator';
import type { Scope } from './scopes';

describe('BearerGuard', () => {
  const liveToken: Bearer = { caller: 'token:1', scopes: ['plants:read'] };
  let guard: BearerGuard;
  let metadata: Record<string, unknown>;
  /** The reasons counted in plant_store_authentication_failures_total, in order. */
  let counted: string[];
  /** How many times the guard asked the reflector for a route's metadata. */
  let reads: number;

  beforeEach(() => {
    metadata = {};
    reads = 0;
    const reflector = {
      getAllAndOverride: (key: string) => {
        reads += 1;
        return metadata[key];
      },
    } as unknown as Reflector;
    counted = [];
    const metrics = {
      authenticationFailures: {
        inc: ({ reason }: { reason: string }) => counted.push(reason),
      },
    } as unknown as Metrics;
    // what `admit` uses to prove tokens: canActivate reads only its verdict
    const unusedByCanActivate = {} as never;
    guard = new BearerGuard(
      reflector,
      metrics,
      unusedByCanActivate,
      unusedByCanActivate,
      unusedByCanActivate,
    );
  });

  /**
   * A request as `admit` leaves it: `bearer` is the token it proved, null one it
   * rejected, undefined when it proved none (none presented, or admission did not run). Each
   * context is a route of its own unless one is given (the guard reads a route's metadata once).
   */
  function contextWith(
    authorization?: string,
    bearer?: Bearer | null,
    route: { handler: object; controller: object } = {
      handler: () => undefined,
      controller: class {},
    },
  ): ExecutionContext {
    const request = {
      headers: authorization === undefined ? {} : { authorization },
    } as AdmittedRequest;
    if (bearer === null) {
      request.unauthenticated = {
        reason: 'rejected',
        message: AUTH_MESSAGES.rejectedToken,
      };
    } else if (bearer !== undefined) {
      request.bearer = bearer;
    } else if (bearerTokenOf(request) === undefined) {
      request.unauthenticated = absentTokenOf(request);
    }
    return {
      getHandler: () => route.handler,
      getClass: () => route.controller,
      switchToHttp: () => ({ getRequest: () => request }),
    } as unknown as ExecutionContext;
  }

  function failureOf(
    authorization?: string,
    bearer?: Bearer | null,
    route?: Parameters<typeof contextWith>[2],
  ) {
    const countedBefore = counted.length;
    let error: unknown;
    try {
      guard.canActivate(contextWith(authorization, bearer, route));
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(HttpErrorWithHeaders);
    const failure = error as HttpErrorWithHeaders;
    return {
      status: failure.getStatus(),
      message: failure.message,
      challenge: failure.headers['WWW-Authenticate'],
      counted: counted.slice(countedBefore),
    };
  }

  it('lets a @Public() route through whatever the request presents', () => {
    metadata[IS_PUBLIC_KEY] = true;
    expect(guard.canActivate(contextWith())).toBe(true);
    expect(guard.canActivate(contextWith('Bearer junk', null))).toBe(true);
    expect(counted).toEqual([]);
  });

  it('denies a route without any metadata when there is no token', () => {
    expect(failureOf()).toEqual({
      status: 401,
      message: 'missing bearer token: send Authorization: Bearer <token>',
      challenge: 'Bearer realm="plant-store"',
      counted: ['missing'],
    });
  });

  it('denies another scheme', () => {
    expect(failureOf('Basic abc')).toEqual({
      status: 401,
      message:
        'the Authorization header must use the Bearer scheme: Authorization: Bearer <token>',
      challenge: 'Bearer realm="plant-store"',
      counted: ['not_bearer'],
    });
  });

  it('denies the Bearer scheme without a token, saying the token is empty', () => {
    expect(failureOf('Bearer ')).toEqual({
      status: 401,
      message: expect.stringMatching(/^the bearer token is empty: /) as string,
      challenge: 'Bearer realm="plant-store"',
      counted: ['empty'],
    });
  });

  it('denies a token that was not proven, with invalid_token', () => {
    metadata[REQUIRED_SCOPES_KEY] = ['plants:read'] satisfies Scope[];
    const rejected = {
      status: 401,
      message: 'the bearer token is unknown, revoked or expired',
      challenge: 'Bearer realm="plant-store", error="invalid_token"',
      counted: ['rejected'],
    };
    expect(failureOf('Bearer bad', null)).toEqual(rejected);
    // a token nobody proved (admission did not run) is no better than a rejected one
    expect(failureOf('Bearer good', undefined)).toEqual(rejected);
  });

  it('accepts the scheme in any case', () => {
    metadata[REQUIRED_SCOPES_KEY] = ['plants:read'] satisfies Scope[];
    expect(guard.canActivate(contextWith('bEaReR good', liveToken))).toBe(true);
  });

  it('denies even a live token on a route that declares no access', () => {
    expect(failureOf('Bearer good', liveToken)).toEqual({
      status: 403,
      message: 'this operation declares no access, so no token may call it',
      challenge: undefined,
      counted: ['insufficient_scope'],
    });
    metadata[REQUIRED_SCOPES_KEY] = [];
    expect(failureOf('Bearer good', liveToken).status).toBe(403);
  });

  it('answers 403 insufficient_scope naming the missing scope', () => {
    metadata[REQUIRED_SCOPES_KEY] = [
      'plants:read',
      'plants:write',
    ] satisfies Scope[];
    expect(failureOf('Bearer good', liveToken)).toEqual({
      status: 403,
      message: 'the bearer token lacks the scope plants:write',
      challenge:
        'Bearer realm="plant-store", error="insufficient_scope", scope="plants:write"',
      counted: ['insufficient_scope'],
    });
  });

  it('names every missing scope when several are missing', () => {
    metadata[REQUIRED_SCOPES_KEY] = [
      'plants:read',
      'plants:write',
      'webhooks:manage',
    ] satisfies Scope[];
    const noScopes: Bearer = { caller: 'token:2', scopes: [] };
    expect(failureOf('Bearer good', noScopes)).toEqual({
      status: 403,
      message:
        'the bearer token lacks the scopes plants:read plants:write webhooks:manage',
      challenge:
        'Bearer realm="plant-store", error="insufficient_scope", scope="plants:read plants:write webhooks:manage"',
      counted: ['insufficient_scope'],
    });
  });

  it("reads a route's metadata once, and each route's apart", () => {
    metadata[REQUIRED_SCOPES_KEY] = ['plants:read'] satisfies Scope[];
    const route = { handler: () => undefined, controller: class {} };
    for (let i = 0; i < 3; i += 1) {
      expect(
        guard.canActivate(contextWith('Bearer pst_x', liveToken, route)),
      ).toBe(true);
    }
    expect(reads).toBe(2);
    // the same handler in another controller (an inherited method) is another route
    metadata[REQUIRED_SCOPES_KEY] = ['plants:write'] satisfies Scope[];
    const inherited = { handler: route.handler, controller: class {} };
    expect(failureOf('Bearer pst_x', liveToken, inherited).status).toBe(403);
    expect(reads).toBe(4);
  });
});
