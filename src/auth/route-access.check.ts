import { Injectable, type OnModuleInit } from '@nestjs/common';
import { PATH_METADATA } from '@nestjs/common/constants';
import { DiscoveryService, MetadataScanner, Reflector } from '@nestjs/core';
import { IS_PUBLIC_KEY } from './decorators/public.decorator';
import { REQUIRED_SCOPES_KEY } from './decorators/require-scopes.decorator';
import { StartupError } from '../common/errors/startup-error';

/** Routes that declare no access; the message is one line naming each controller and handler. */
export class UndeclaredAccessError extends StartupError {
  override readonly name: string = 'UndeclaredAccessError';

  constructor(routes: string[]) {
    super(
      `${routes.join(', ')} ${routes.length === 1 ? 'declares' : 'declare'} no access: ` +
        'mark each route @Public() or @RequireScopes(...) (docs/adding-a-module.md, "Access")',
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
 * neither stops the boot, rather than being open to any valid token.
 */
@Injectable()
export class RouteAccessCheck implements OnModuleInit {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly scanner: MetadataScanner,
    private readonly reflector: Reflector,
  ) {}

  onModuleInit(): void {
    const undeclared = this.routesWithoutAccess();
    if (undeclared.length > 0) throw new UndeclaredAccessError(undeclared);
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
