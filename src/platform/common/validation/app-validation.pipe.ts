import {
  ArgumentMetadata,
  BadRequestException,
  Injectable,
  ValidationPipe,
  type ValidationError,
} from '@nestjs/common';
import { integersAsNumbers } from './integers-as-numbers';

function collectMessages(errors: ValidationError[]): string[] {
  return errors.flatMap((error) => [
    ...Object.values(error.constraints ?? {}),
    ...collectMessages(error.children ?? []),
  ]);
}

/**
 * The global pipe: DTO failures become one 400 whose message names every field that is wrong (docs/decisions.md, "The Error object"). Extra properties
 * are dropped, not echoed ("Unknown properties"). What comes before: unknown query parameters
 * are refused by KnownQueryGuard, and a body that is no JSON object by JsonBodyGuard.
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
    // JsonBodyGuard let only a JSON object through
    if (metadata.type === 'body') integersAsNumbers(value, metadata.metatype);
    return (await super.transform(value, metadata)) as unknown;
  }
}
