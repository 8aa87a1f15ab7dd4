import {
  ArgumentMetadata,
  BadRequestException,
  Injectable,
  ValidationPipe,
  type ValidationError,
} from '@nestjs/common';
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
 * The global pipe: a body must be a JSON object, and DTO failures become one 400 whose message
 * names every field that is wrong (docs/decisions.md, "The Error object"). Extra properties
 * are dropped, not echoed ("Unknown properties"); unknown query parameters are refused before
 * (KnownQueryGuard).
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
