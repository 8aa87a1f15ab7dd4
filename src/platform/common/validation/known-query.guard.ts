import {
  BadRequestException,
  Injectable,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { getMetadataStorage } from 'class-validator';
import type { Request } from 'express';

/**
 * Every operation refuses a query parameter it does not take, rather than ignore it: `?TAG=x`
 * or `?tags=x` answered as if no filter were asked would look like a filter that matched all,
 * and `DELETE /plants/7?dryRun=true` would delete (docs/decisions.md, "Query parameters").
 * The names an operation takes are those of its `@Query()` DTO, or its `@Query('name')`
 * parameters; none, for an operation without either.
 *
 * A global guard, after the access rule and before a body is read: nothing is parsed for a
 * caller that may not call the operation, and a refused request costs no body.
 */
@Injectable()
export class KnownQueryGuard implements CanActivate {
  private readonly takes = new WeakMap<object, readonly string[]>();

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Request>();
    // the common case, answered without parsing
    if (!request.url.includes('?')) return true;
    const given = Object.keys(request.query);
    if (given.length === 0) return true;
    const bracketed = given.find((name) => /[[\]]/.test(name));
    if (bracketed !== undefined) {
      // `tag[]=x` would otherwise be dropped as unknown, or read as another parameter
      const plain = bracketed.replace(/[[\]].*$/, '') || bracketed;
      throw new BadRequestException(
        `query parameter ${JSON.stringify(bracketed)} is not a parameter: give each parameter once, by its plain name (${plain}=...)`,
      );
    }
    const known = this.namesTakenBy(context);
    const unknown = given.find((name) => !known.includes(name));
    if (unknown !== undefined) {
      throw new BadRequestException(unknownQueryMessage(unknown, known));
    }
    return true;
  }

  private namesTakenBy(context: ExecutionContext): readonly string[] {
    const handler = context.getHandler();
    let names = this.takes.get(handler);
    if (names === undefined) {
      names = queryNamesOf(context.getClass(), handler.name);
      this.takes.set(handler, names);
    }
    return names;
  }
}

/** The 400's message for `name`, given to an operation that takes `known`. */
export function unknownQueryMessage(
  name: string,
  known: readonly string[],
): string {
  return known.length === 0
    ? `query parameter ${JSON.stringify(name)} is not one this operation takes; it takes no query parameters`
    : `query parameter ${JSON.stringify(name)} is not one this operation takes; it takes ${known.join(', ')} (names are case-sensitive)`;
}

interface RouteArgument {
  index: number;
  data?: unknown;
}

/** The query parameters a controller method takes, in the order it declares them. */
function queryNamesOf(controller: object, method: string): string[] {
  const parameters =
    (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, method) as
      | Record<string, RouteArgument>
      | undefined) ?? {};
  const types =
    (Reflect.getMetadata(
      'design:paramtypes',
      (controller as { prototype: object }).prototype,
      method,
    ) as unknown[] | undefined) ?? [];
  const names = Object.entries(parameters)
    .filter(([key]) => key.startsWith(`${RouteParamtypes.QUERY}:`))
    .flatMap(([, { index, data }]) =>
      typeof data === 'string' ? [data] : declaredNames(types[index]),
    );
  return [...new Set(names)];
}

/** The properties a DTO class declares to class-validator, in the order it declares them. */
function declaredNames(metatype: unknown): string[] {
  if (typeof metatype !== 'function') return [];
  return getMetadataStorage()
    .getTargetValidationMetadatas(metatype, '', true, false)
    .map(({ propertyName }) => propertyName);
}
