import { Controller, Get, Post, type Type } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import { Public } from './decorators/public.decorator';
import { RequireScopes } from './decorators/require-scopes.decorator';
import { RouteAccessCheck, UndeclaredAccessError } from './route-access.check';

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

async function boot(...controllers: Type[]) {
  const moduleRef = await Test.createTestingModule({
    imports: [DiscoveryModule],
    controllers,
    providers: [RouteAccessCheck],
  }).compile();
  return moduleRef.createNestApplication({ logger: false }).init();
}

describe('RouteAccessCheck', () => {
  it('lets an app boot whose routes each declare @Public() or scopes, on the handler or the class', async () => {
    const app = await boot(DeclaredController, DeclaredOnClassController);
    expect(app.get(RouteAccessCheck).routesWithoutAccess()).toEqual([]);
    await app.close();
  });

  it('refuses to boot an app with a route that declares no access, in one line naming controller and handler', async () => {
    const failure = await boot(DeclaredController, ForgottenController).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(UndeclaredAccessError);
    const { message } = failure as Error;
    expect(message).toBe(
      'ForgottenController.create declares no access: mark each route @Public() or @RequireScopes(...) (docs/adding-a-module.md, "Access")',
    );
    expect(message).not.toContain('\n');
  });

  it("counts an empty list of scopes as no access, which the decorator's type refuses too", async () => {
    await expect(boot(EmptyScopesController)).rejects.toThrow(
      /^EmptyScopesController\.anyToken declares no access/,
    );
  });
});
