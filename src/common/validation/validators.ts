import { ValidateBy, type ValidationOptions } from 'class-validator';
import { INT64_RANGE_MESSAGE, isInt64 } from '../json/int64';

/**
 * An exact int64. class-validator's IsInt accepts 2^53+2 and 1e21 and rejects bigint; the
 * lossless body parser gives every integer as a bigint, so this checks the bigint's range.
 */
export function IsInt64(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isInt64',
      validator: {
        validate: (value: unknown) => isInt64(value),
        defaultMessage: (args) =>
          `${args?.property} must be ${INT64_RANGE_MESSAGE}`,
      },
    },
    options,
  );
}

/**
 * A string of Unicode text: lone UTF-16 surrogates cannot be stored as UTF-8, so a name that
 * holds one could never be returned exactly as it was sent.
 */
export function IsUnicodeString(
  options?: ValidationOptions,
): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isUnicodeString',
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' && value.isWellFormed(),
        defaultMessage: (args) =>
          typeof args?.value === 'string'
            ? `${args.property} must be valid Unicode text (it contains a lone surrogate)`
            : `${args?.property} must be a string`,
      },
    },
    options,
  );
}
