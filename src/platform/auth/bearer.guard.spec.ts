import type { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import type { RateLimiter } from '../rate-limit/rate-limiter';
import type { Metrics } from '../metrics/metrics';
import { HttpErrorWithHeaders } from '../common/errors/http-error-with-headers';
import { AUTH_MESSAGES } from './auth-messages';
import { TokenRejection, type Bearer } from './bearer';
import {
  absentTokenOf,
  BearerGuard,
  bearerTokenOf,
  type AdmittedRequest,
} from './bearer.guard';
import { IS_PUBLIC_KEY } from './decorators/public.decorator';
import { REQUIRED_SCOPES_KEY } from './decorators/require-scopes.decorator';
import type { IdentityProviderTokensService } from './oidc/identity-provider-tokens.service';
import type { Scope } from './scopes';
import type { TokensService } from './tokens.service';

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

describe('BearerGuard.admit', () => {
  const TOKEN = 'pst_abc';
  /** What the guard asked of the rate limiter and the token stores, in order. */
  let calls: unknown[][];
  let identityProviderEnabled: boolean;
  let known: Record<string, { id: number; scopes: string[] }>;
  let verified: Record<string, Bearer | TokenRejection>;
  let blocked: Error | undefined;
  let overLimit: Error | undefined;
  let guard: BearerGuard;

  beforeEach(() => {
    calls = [];
    identityProviderEnabled = false;
    known = { [TOKEN]: { id: 5, scopes: ['plants:read'] } };
    verified = {};
    blocked = undefined;
    overLimit = undefined;
    const tokens = {
      authenticate: (presented: string) => {
        calls.push(['authenticate', presented]);
        return Promise.resolve(known[presented]);
      },
    } as unknown as TokensService;
    const identityProvider = {
      get enabled() {
        return identityProviderEnabled;
      },
      verify: (presented: string) => {
        calls.push(['verify', presented]);
        return Promise.resolve(verified[presented]);
      },
    } as unknown as IdentityProviderTokensService;
    const limiter = {
      refuseBlockedAddress: (address: string) => {
        calls.push(['refuseBlockedAddress', address]);
        return blocked ? Promise.reject(blocked) : Promise.resolve();
      },
      countRejectedToken: (address: string) => {
        calls.push(['countRejectedToken', address]);
        return Promise.resolve();
      },
      chargeRequest: (_response: Response, payer: object) => {
        calls.push(['chargeRequest', payer]);
        return overLimit ? Promise.reject(overLimit) : Promise.resolve();
      },
    } as unknown as RateLimiter;
    guard = new BearerGuard(
      {} as Reflector,
      {} as Metrics,
      tokens,
      identityProvider,
      limiter,
    );
  });

  /** The request as `admit` left it, and what it passed to next(). */
  async function admitted(
    authorization?: string,
    { path = '/plants', method = 'GET', ip = '10.0.0.7' } = {},
  ) {
    const request = {
      path,
      method,
      ip,
      headers: authorization === undefined ? {} : { authorization },
    } as AdmittedRequest;
    const passed = await new Promise<unknown[]>((resolve) =>
      guard.admit(request, {} as Response, (...args: unknown[]) =>
        resolve(args),
      ),
    );
    return {
      bearer: request.bearer,
      unauthenticated: request.unauthenticated,
      passed,
    };
  }

  it('lets the health probes by untouched when GET or HEAD, and charges any other method there', async () => {
    for (const method of ['GET', 'HEAD']) {
      for (const path of ['/health/live', '/health/ready']) {
        expect(await admitted(TOKEN, { path, method })).toEqual({
          bearer: undefined,
          unauthenticated: undefined,
          passed: [],
        });
      }
    }
    expect(calls).toEqual([]);
    await admitted(undefined, { path: '/health/live', method: 'POST' });
    expect(calls).toEqual([['chargeRequest', { address: '10.0.0.7' }]]);
  });

  it('charges a request without a token to its address, and says why it has no caller', async () => {
    expect(await admitted()).toEqual({
      bearer: undefined,
      unauthenticated: {
        reason: 'missing',
        message: AUTH_MESSAGES.missingToken,
      },
      passed: [],
    });
    expect((await admitted('Bearer  ')).unauthenticated?.reason).toBe('empty');
    expect((await admitted(`Basic ${TOKEN}`)).unauthenticated?.reason).toBe(
      'not_bearer',
    );
    // no token, so no block is looked up and no store is asked
    expect(calls).toEqual(
      Array(3).fill(['chargeRequest', { address: '10.0.0.7' }]),
    );
  });

  it('proves a token of ours once, after the address block, and charges its caller', async () => {
    expect(await admitted(`Bearer ${TOKEN}`)).toEqual({
      bearer: { caller: 'token:5', scopes: ['plants:read'] },
      unauthenticated: undefined,
      passed: [],
    });
    expect(calls).toEqual([
      ['refuseBlockedAddress', '10.0.0.7'],
      ['authenticate', TOKEN],
      ['chargeRequest', { caller: 'token:5' }],
    ]);
  });

  it('counts an unknown token as a guess against the address it came from (an IPv6 one by its /64)', async () => {
    expect(
      await admitted('Bearer pst_nope', { ip: '2001:db8:1:2:3:4:5:6' }),
    ).toEqual({
      bearer: undefined,
      unauthenticated: {
        reason: 'rejected',
        message: AUTH_MESSAGES.rejectedToken,
      },
      passed: [],
    });
    const address = '2001:db8:1:2::/64';
    expect(calls).toEqual([
      ['refuseBlockedAddress', address],
      ['authenticate', 'pst_nope'],
      ['countRejectedToken', address],
      ['chargeRequest', { address }],
    ]);
  });

  it('asks the identity provider for any other token when OIDC is on, and never for one of ours', async () => {
    identityProviderEnabled = true;
    const fromProvider: Bearer = {
      caller: 'jwt:alice@https://issuer.example',
      scopes: ['plants:write'],
    };
    verified = {
      'eyJ.good': fromProvider,
      'eyJ.bad': new TokenRejection('the access token has expired'),
      'eyJ.away': new TokenRejection('the identity provider is away', false),
    };
    expect((await admitted('Bearer eyJ.good')).bearer).toEqual(fromProvider);
    expect((await admitted(`Bearer ${TOKEN}`)).bearer?.caller).toBe('token:5');
    expect((await admitted('Bearer eyJ.bad')).unauthenticated).toEqual({
      reason: 'rejected',
      message: 'the access token has expired',
    });
    // a provider that could not be asked is no guess of the client's
    expect((await admitted('Bearer eyJ.away')).unauthenticated?.message).toBe(
      'the identity provider is away',
    );
    const asked = calls.filter(([name]) =>
      ['verify', 'authenticate', 'countRejectedToken'].includes(name as string),
    );
    expect(asked).toEqual([
      ['verify', 'eyJ.good'],
      ['authenticate', TOKEN],
      ['verify', 'eyJ.bad'],
      ['countRejectedToken', '10.0.0.7'],
      ['verify', 'eyJ.away'],
    ]);
  });

  it('charges a request whose address is gone (its socket closed) to the empty address', async () => {
    const request = { path: '/plants', method: 'GET', headers: {} };
    await new Promise((resolve) =>
      guard.admit(request as AdmittedRequest, {} as Response, resolve),
    );
    expect(calls).toEqual([['chargeRequest', { address: '' }]]);
  });

  it('passes a blocked address or a spent limit to next() as the error, the token never looked up when blocked', async () => {
    blocked = new Error('429: blocked');
    expect((await admitted(`Bearer ${TOKEN}`)).passed).toEqual([blocked]);
    expect(calls).toEqual([['refuseBlockedAddress', '10.0.0.7']]);
    blocked = undefined;
    overLimit = new Error('429: requests');
    expect((await admitted(`Bearer ${TOKEN}`)).passed).toEqual([overLimit]);
    expect((await admitted()).passed).toEqual([overLimit]);
  });
});

describe('bearerTokenOf and absentTokenOf', () => {
  const requestWith = (authorization?: string) =>
    ({
      headers: authorization === undefined ? {} : { authorization },
    }) as Request;

  it.each([
    ['Bearer pst_a', 'pst_a'],
    ['bearer pst_a', 'pst_a'],
    ['Bearer   pst_a  ', 'pst_a'],
  ])('reads the token of %j', (authorization, token) => {
    expect(bearerTokenOf(requestWith(authorization))).toBe(token);
  });

  it.each([
    [undefined, 'missing'],
    ['Bearer', 'empty'],
    ['Bearer \t', 'empty'],
    ['Bearer pst_a pst_b', 'not_bearer'],
    ['XBearer pst_a', 'not_bearer'],
    ['XBearer', 'not_bearer'],
    ['Basic pst_a', 'not_bearer'],
  ])('reads no token from %j, and says it is %s', (authorization, reason) => {
    const request = requestWith(authorization);
    expect(bearerTokenOf(request)).toBeUndefined();
    expect(absentTokenOf(request).reason).toBe(reason);
  });
});
