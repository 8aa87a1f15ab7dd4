import { Injectable, type OnModuleInit } from '@nestjs/common';
import { PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { IS_PUBLIC_KEY } from './decorators/public.decorator';
import { REQUIRED_SCOPES_KEY } from './decorators/require-scopes.decorator';
import { StartupError } from '../common/errors/startup-error';
import { ScopeCatalogue } from './scopes';

/** Routes that declare no access; the message is one line naming each controller and handler. */
export class UndeclaredAccessError extends StartupError {
  override readonly name: string = 'UndeclaredAccessError';

  constructor(routes: string[]) {
    super(
      `${routes.join(', ')} ${routes.length === 1 ? 'declares' : 'declare'} no access: ` +
        'mark each route @Public() or @RequireScopes(...) (docs/conventions.md, "Access")',
    );
  }
}

/** Routes that require a scope no module declares: a typo, or a module missing its declaration. */
export class UndeclaredScopeError extends StartupError {
  override readonly name: string = 'UndeclaredScopeError';

  constructor(problems: string[], declared: readonly string[]) {
    super(
      `${problems.join(', ')}, which no module declares (declared: ${declared.join(', ')}): ` +
        'declare it with ScopesModule.forFeature in its module (docs/conventions.md, "Access")',
    );
  }
}

export interface RouteAccess {
  /** `Controller.method` */
  handler: string;
  isPublic: boolean;
  scopes: string[];
}

/**
 * Deny by default, checked before the app serves anything: every route must say who may call
 * it, with @Public() or @RequireScopes(...) on the handler or its controller. A route that says
 * neither stops the boot, rather than being open to any valid token; so does a route requiring
 * a scope that no module declares, which no token could hold.
 */
@Injectable()
export class RouteAccessCheckService implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
    private readonly scopes: ScopeCatalogue,
  ) {}

  onModuleInit(): void {
    const undeclared = this.routesWithoutAccess();
    if (undeclared.length > 0) throw new UndeclaredAccessError(undeclared);
    const unknownScopes = this.routesWithUndeclaredScopes();
    if (unknownScopes.length > 0) {
      throw new UndeclaredScopeError(unknownScopes, this.scopes.all);
    }
  }

  /** `Controller.handler requires x:y` for every scope a route requires that is not declared. */
  routesWithUndeclaredScopes(): string[] {
    return this.routes().flatMap(({ handler, scopes }) =>
      scopes
        .filter((scope) => !this.scopes.has(scope))
        .map((scope) => `${handler} requires ${scope}`),
    );
  }

  /** `Controller.handler` of every route that declares no access. */
  routesWithoutAccess(): string[] {
    return this.routes()
      .filter(({ isPublic, scopes }) => !isPublic && scopes.length === 0)
      .map(({ handler }) => handler);
  }

  /** Every route handler of the app, with the access it declares. */
  routes(): RouteAccess[] {
    const routes: RouteAccess[] = [];
    for (const { metatype, instance } of this.discovery.getControllers()) {
      if (!metatype || !instance) continue;
      const prototype = Object.getPrototypeOf(instance) as object;
      for (const name of this.scanner.getAllMethodNames(prototype)) {
        const handler = (prototype as Record<string, unknown>)[name];
        if (
          typeof handler !== 'function' ||
          Reflect.getMetadata(PATH_METADATA, handler) === undefined
        ) {
          continue;
        }
        const targets = [handler, metatype];
        const isPublic = this.reflector.getAllAndOverride<boolean>(
          IS_PUBLIC_KEY,
          targets,
        );
        const scopes = this.reflector.getAllAndOverride<string[] | undefined>(
          REQUIRED_SCOPES_KEY,
          targets,
        );
        routes.push({
          handler: `${metatype.name}.${name}`,
          isPublic: isPublic === true,
          scopes: scopes ?? [],
        });
      }
    }
    return routes;
  }
}
