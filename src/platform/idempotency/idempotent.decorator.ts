import { applyDecorators, Inject, Req } from '@nestjs/common';
import {
  PROPERTY_DEPS_METADATA,
  ROUTE_ARGS_METADATA,
} from '@nestjs/common/constants';
import { ApiHeader } from '@nestjs/swagger';
import { IDEMPOTENCY_KEY_HEADER, MAX_KEY_LENGTH } from './idempotency-key';
import {
  IdempotencyRunner,
  type IdempotentOptions,
  type KeyableRequest,
} from './idempotency.runner';

/** The controller's property that the runner is injected into. */
const RUNNER = Symbol('IdempotencyRunner');

type Handler = (this: object, ...args: unknown[]) => unknown;

/**
 * Makes a create safe to send again: with an `Idempotency-Key`, a repeat gets the first
 * request's answer instead of running again (docs/decisions.md, "Idempotency keys"). For POST
 * routes that need a token; the OpenAPI document gains the header, `Idempotent-Replayed` and
 * the 409 of a repeat that comes while the first still runs.
 */
export function Idempotent(options: IdempotentOptions = {}): MethodDecorator {
  return applyDecorators(
    RunThroughIdempotencyRunner(options),
    ApiHeader({
      name: IDEMPOTENCY_KEY_HEADER,
      required: false,
      description:
        'A key of your choice, unique per request (a UUID, say), to send the request again safely: a repeat with the same key, method, path and body gets the first answer, with `Idempotent-Replayed: true`, and changes nothing. Kept for 24 hours by default',
      schema: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_KEY_LENGTH,
        pattern: '^[\\x21-\\x7E]+$',
      },
      // no example: Swagger UI fills it in for "Try it out", and the page's next create, with
      // another body, would be refused as "already used for another request"
    }),
  );
}

/**
 * Wraps the handler itself rather than adding an interceptor: a route with an interceptor goes
 * through Nest's Observable pipeline on every request, key or none, which cost a create a
 * fifth of its instructions (bench/README.md, "Issue 38"). The wrapper is handed the request
 * as one more argument (`@Req()`, after the handler's own) and the runner as a property of the
 * controller, both injected by Nest.
 */
function RunThroughIdempotencyRunner(
  options: IdempotentOptions,
): MethodDecorator {
  const { isolation } = options;
  return <T>(
    prototype: object,
    method: string | symbol,
    descriptor: TypedPropertyDescriptor<T>,
  ) => {
    const handler = descriptor.value as Handler;
    const requestAt = argumentCount(prototype, method);
    Req()(prototype, method, requestAt);
    injectRunnerInto(prototype);
    const idempotent = function (
      this: Record<typeof RUNNER, IdempotencyRunner>,
      ...args: unknown[]
    ) {
      const [request] = args.splice(requestAt, 1) as [KeyableRequest];
      return this[RUNNER].run(request, isolation, () =>
        handler.apply(this, args),
      );
    };
    for (const key of Reflect.getOwnMetadataKeys(handler)) {
      Reflect.defineMetadata(
        key,
        Reflect.getOwnMetadata(key, handler),
        idempotent,
      );
    }
    Object.defineProperty(idempotent, 'name', { value: handler.name });
    descriptor.value = idempotent as T;
  };
}

/** How many arguments Nest passes the handler: its declared parameters, decorated or not. */
function argumentCount(prototype: object, method: string | symbol): number {
  const declared =
    (
      Reflect.getMetadata('design:paramtypes', prototype, method) as
        | unknown[]
        | undefined
    )?.length ?? 0;
  const decorated = Object.values(
    (Reflect.getMetadata(ROUTE_ARGS_METADATA, prototype.constructor, method) ??
      {}) as Record<string, { index: number }>,
  ).map(({ index }) => index + 1);
  return Math.max(declared, ...decorated);
}

function injectRunnerInto(prototype: object): void {
  const injected = (Reflect.getMetadata(
    PROPERTY_DEPS_METADATA,
    prototype.constructor,
  ) ?? []) as { key: string | symbol }[];
  if (!injected.some(({ key }) => key === RUNNER)) {
    Inject(IdempotencyRunner)(prototype, RUNNER);
  }
}
