import { Controller, Get, Post, type Type } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { Public } from './decorators/public.decorator';
import { RequireScopes } from './decorators/require-scopes.decorator';
import {
  RouteAccessCheckService,
  UndeclaredAccessError,
  UndeclaredScopeError,
} from './route-access-check.service';
import { DeclaredScopes, ScopeCatalogue } from './scopes';

@Controller('declared')
class DeclaredController {
  @Get()
  @RequireScopes('plants:read')
  read() {}

  @Get('open')
  @Public()
  open() {}

  /** Not a route: no access to declare. */
  helper() {}
}

@RequireScopes('webhooks:manage')
@Controller('declared-on-class')
class DeclaredOnClassController {
  @Get()
  list() {}
}

@Controller('forgotten')
class ForgottenController {
  @Get()
  @RequireScopes('plants:read')
  read() {}

  @Post()
  create() {}
}

@Controller('empty-scopes')
class EmptyScopesController {
  @Get()
  // @ts-expect-error: RequireScopes takes at least one scope, since none would mean any token
  @RequireScopes()
  anyToken() {}
}

@Controller('misspelt')
class MisspeltScopeController {
  @Post()
  @RequireScopes('plants:read', 'plants:wirte')
  create() {}
}

const declared = new ScopeCatalogue([
  new DeclaredScopes({
    'plants:read': { description: 'read', byDefault: true },
    'webhooks:manage': { description: 'manage', byDefault: false },
  }),
]);

async function boot(...controllers: Type[]) {
  const moduleRef = await Test.createTestingModule({
    imports: [DiscoveryModule],
    controllers,
    providers: [
      RouteAccessCheckService,
      { provide: ScopeCatalogue, useValue: declared },
    ],
  }).compile();
  return moduleRef.createNestApplication({ logger: false }).init();
}

describe('RouteAccessCheckService', () => {
  it('lets an app boot whose routes each declare @Public() or scopes, on the handler or the class', async () => {
    const app = await boot(DeclaredController, DeclaredOnClassController);
    expect(app.get(RouteAccessCheckService).routesWithoutAccess()).toEqual([]);
    await app.close();
  });

  it('refuses to boot an app with a route that declares no access, in one line naming controller and handler', async () => {
    const failure = await boot(DeclaredController, ForgottenController).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(UndeclaredAccessError);
    const { message } = failure as Error;
    expect(message).toBe(
      'ForgottenController.create declares no access: mark each route @Public() or @RequireScopes(...) (docs/conventions.md, "Access")',
    );
    expect(message).not.toContain('\n');
  });

  it("counts an empty list of scopes as no access, which the decorator's type refuses too", async () => {
    await expect(boot(EmptyScopesController)).rejects.toThrow(
      /^EmptyScopesController\.anyToken declares no access/,
    );
  });

  it('refuses to boot an app with a route requiring a scope no module declares, naming route, scope and the declared ones', async () => {
    const failure = await boot(
      DeclaredController,
      MisspeltScopeController,
    ).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(UndeclaredScopeError);
    expect((failure as Error).message).toBe(
      'MisspeltScopeController.create requires plants:wirte, which no module declares (declared: plants:read, webhooks:manage): declare it with ScopesModule.forFeature in its module (docs/conventions.md, "Access")',
    );
  });
});
