import type { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { ThrottlerStorage } from '@nestjs/throttler';
import { readAppConfig } from '../config/app.config';
import { HttpErrorWithHeaders } from '../common/errors/http-error-with-headers';
import type { ApiToken } from './api-token.entity';
import { BearerGuard } from './bearer.guard';
import { IS_PUBLIC_KEY } from './decorators/public.decorator';
import { REQUIRED_SCOPES_KEY } from './decorators/require-scopes.decorator';
import type { Scope } from './scopes';
import type { TokensService } from './tokens.service';

describe('BearerGuard', () => {
  const liveToken = { scopes: ['plants:read'] } as unknown as ApiToken;
  let authenticate: jest.Mock;
  let guard: BearerGuard;
  let metadata: Record<string, unknown>;

  beforeEach(() => {
    metadata = {};
    authenticate = jest.fn((token: string) =>
      Promise.resolve(token === 'good' ? liveToken : undefined),
    );
    const reflector = {
      getAllAndOverride: (key: string) => metadata[key],
    } as unknown as Reflector;
    const counters = {
      increment: () =>
        Promise.resolve({
          totalHits: 1,
          timeToExpire: 60,
          isBlocked: false,
          timeToBlockExpire: 0,
        }),
    };
    guard = new BearerGuard(
      reflector,
      { authenticate } as unknown as TokensService,
      counters as unknown as ThrottlerStorage,
      readAppConfig({}),
    );
  });

  function contextWith(authorization?: string): ExecutionContext {
    return {
      getHandler: () => undefined,
      getClass: () => undefined,
      switchToHttp: () => ({
        getRequest: () => ({
          headers: authorization === undefined ? {} : { authorization },
        }),
      }),
    } as unknown as ExecutionContext;
  }

  async function failureOf(authorization?: string) {
    const error = await guard
      .canActivate(contextWith(authorization))
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpErrorWithHeaders);
    const { headers } = error as HttpErrorWithHeaders;
    return {
      status: (error as HttpErrorWithHeaders).getStatus(),
      challenge: headers['WWW-Authenticate'],
    };
  }

  it('lets a @Public() route through without looking at any token', async () => {
    metadata[IS_PUBLIC_KEY] = true;
    await expect(guard.canActivate(contextWith())).resolves.toBe(true);
    expect(authenticate).not.toHaveBeenCalled();
  });

  it('denies a route without any metadata when there is no token', async () => {
    expect(await failureOf()).toEqual({
      status: 401,
      challenge: 'Bearer realm="plant-store"',
    });
  });

  it('denies another scheme without asking the token store', async () => {
    expect(await failureOf('Basic abc')).toEqual({
      status: 401,
      challenge: 'Bearer realm="plant-store"',
    });
    expect(authenticate).not.toHaveBeenCalled();
  });

  it('denies a token the store does not accept, with invalid_token', async () => {
    expect(await failureOf('Bearer bad')).toEqual({
      status: 401,
      challenge: 'Bearer realm="plant-store", error="invalid_token"',
    });
  });

  it('accepts the scheme in any case', async () => {
    metadata[REQUIRED_SCOPES_KEY] = ['plants:read'] satisfies Scope[];
    await expect(guard.canActivate(contextWith('bEaReR good'))).resolves.toBe(
      true,
    );
    expect(authenticate).toHaveBeenCalledWith('good');
  });

  it('denies even a live token on a route that declares no access', async () => {
    expect(await failureOf('Bearer good')).toEqual({
      status: 403,
      challenge: undefined,
    });
    metadata[REQUIRED_SCOPES_KEY] = [];
    expect((await failureOf('Bearer good')).status).toBe(403);
  });

  it('accepts a token holding every required scope', async () => {
    metadata[REQUIRED_SCOPES_KEY] = ['plants:read'] satisfies Scope[];
    await expect(guard.canActivate(contextWith('Bearer good'))).resolves.toBe(
      true,
    );
  });

  it('answers 403 insufficient_scope naming the missing scope', async () => {
    metadata[REQUIRED_SCOPES_KEY] = [
      'plants:read',
      'plants:write',
    ] satisfies Scope[];
    expect(await failureOf('Bearer good')).toEqual({
      status: 403,
      challenge:
        'Bearer realm="plant-store", error="insufficient_scope", scope="plants:write"',
    });
  });
});
