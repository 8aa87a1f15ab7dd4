import {
  ArgumentMetadata,
  BadRequestException,
  Injectable,
  ValidationPipe,
  type ValidationError,
} from '@nestjs/common';
import { getMetadataStorage } from 'class-validator';
import { UnreadableBody } from '../json/json-body';
import { integersAsNumbers } from './integers-as-numbers';

function collectMessages(errors: ValidationError[]): string[] {
  return errors.flatMap((error) => [
    ...Object.values(error.constraints ?? {}),
    ...collectMessages(error.children ?? []),
  ]);
}

function describeJsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return 'a string';
  if (typeof value === 'boolean') return 'a boolean';
  return 'a number';
}

/**
 * Query parameters have plain names: `tag[]=x` would otherwise be dropped as an unknown
 * parameter, and the request answered as if it had no filter at all.
 */
function assertPlainQueryNames(query: unknown): void {
  if (typeof query !== 'object' || query === null) return;
  const bracketed = Object.keys(query).find((name) => /[[\]]/.test(name));
  if (bracketed !== undefined) {
    const plain = bracketed.replace(/[[\]].*$/, '') || bracketed;
    throw new BadRequestException(
      `query parameter ${JSON.stringify(bracketed)} is not a parameter: give each parameter once, by its plain name (${plain}=...)`,
    );
  }
}

/** Read once per DTO class: class-validator gathers them anew on every call. */
const DECLARED_NAMES = new WeakMap<object, string[]>();

/** The parameters a query DTO declares, in the order it declares them. */
function declaredNames(metatype: ArgumentMetadata['metatype']): string[] {
  if (typeof metatype !== 'function') return [];
  let names = DECLARED_NAMES.get(metatype);
  if (names === undefined) {
    names = [
      ...new Set(
        getMetadataStorage()
          .getTargetValidationMetadatas(metatype, '', true, false)
          .map(({ propertyName }) => propertyName),
      ),
    ];
    DECLARED_NAMES.set(metatype, names);
  }
  return names;
}

/**
 * A query parameter the operation does not take is refused rather than ignored: `?TAG=x` or
 * `?tags=x` answered as if no filter were asked would look like a filter that matched all.
 */
function assertKnownQueryNames(
  query: unknown,
  metatype: ArgumentMetadata['metatype'],
): void {
  if (typeof query !== 'object' || query === null) return;
  const known = declaredNames(metatype);
  if (known.length === 0) return;
  const unknown = Object.keys(query).find((name) => !known.includes(name));
  if (unknown !== undefined) {
    throw new BadRequestException(
      `query parameter ${JSON.stringify(unknown)} is not one this operation takes; it takes ${known.join(', ')} (names are case-sensitive)`,
    );
  }
}

/**
 * The global pipe: a body must be a JSON object, and DTO failures become one 400 whose message
 * names every field that is wrong (docs/decisions.md, "The Error object"). Extra properties
 * are dropped, not echoed ("Unknown properties").
 */
@Injectable()
export class AppValidationPipe extends ValidationPipe {
  constructor() {
    super({
      transform: true,
      whitelist: true,
      forbidUnknownValues: true,
      stopAtFirstError: true,
      validationError: { target: false, value: false },
      exceptionFactory: (errors) =>
        new BadRequestException(collectMessages(errors).join('; ')),
    });
  }

  /** bigint path ids are read by ParseInt64Pipe, after this pipe; there is no class to check. */
  protected override toValidate(metadata: ArgumentMetadata): boolean {
    return (
      (metadata.metatype as unknown) !== BigInt && super.toValidate(metadata)
    );
  }

  override async transform(
    value: unknown,
    metadata: ArgumentMetadata,
  ): Promise<unknown> {
    if (metadata.type === 'query') {
      assertPlainQueryNames(value);
      assertKnownQueryNames(value, metadata.metatype);
    }
    if (metadata.type === 'body') {
      if (value instanceof UnreadableBody) {
        throw new BadRequestException(value.reason);
      }
      if (value === undefined) {
        throw new BadRequestException(
          'request body is required: send a JSON object',
        );
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new BadRequestException(
          `request body must be a JSON object, got ${describeJsonType(value)}`,
        );
      }
      integersAsNumbers(value, metadata.metatype);
    }
    return (await super.transform(value, metadata)) as unknown;
  }
}
