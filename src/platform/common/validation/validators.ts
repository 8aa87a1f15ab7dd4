import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import {
  isISO8601,
  ValidateBy,
  type ValidationArguments,
  type ValidationOptions,
} from 'class-validator';
import { INT64_RANGE_MESSAGE, isInt64 } from '../json/int64';

/** A missing property is told apart from a wrong one; null counts as present, and wrong. */
function describeProblem(
  args: ValidationArguments | undefined,
  wrong: string,
): string {
  return args?.value === undefined
    ? `${args?.property} is required`
    : `${args.property} ${wrong}`;
}

/**
 * A present, exact int64. class-validator's IsInt accepts 2^53+2 and 1e21 and rejects bigint;
 * the lossless body parser gives every integer as a bigint, so this checks the bigint's range.
 */
export function IsInt64(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isInt64',
      validator: {
        validate: (value: unknown) => isInt64(value),
        defaultMessage: (args) =>
          describeProblem(args, `must be ${INT64_RANGE_MESSAGE}`),
      },
    },
    options,
  );
}

/**
 * A present string of Unicode text: lone UTF-16 surrogates cannot be stored as UTF-8, so a
 * string holding one could never be returned exactly as it was sent.
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
            : describeProblem(args, 'must be a string'),
      },
    },
    options,
  );
}

/**
 * A string of at most `max` bytes once written as UTF-8, for `because` (said in the refusal);
 * anything else is left to the property's other rules.
 */
export function MaxUtf8Bytes(
  max: number,
  because: string,
  options?: ValidationOptions,
): PropertyDecorator {
  return ValidateBy(
    {
      name: 'maxUtf8Bytes',
      validator: {
        validate: (value: unknown) =>
          typeof value !== 'string' || Buffer.byteLength(value, 'utf8') <= max,
        defaultMessage: (args) =>
          `${args!.property} is ${Buffer.byteLength(String(args!.value), 'utf8')} bytes of UTF-8, more than the ${max} it may be: ${because}`,
      },
    },
    options,
  );
}

/**
 * Text that both engines hold: PostgreSQL's text cannot hold U+0000, which SQLite can, so a
 * module's field refuses it on either, as `^[^\u0000]*$` (its schema's pattern) says.
 */
export function IsStorableText(options?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isStorableText',
      validator: {
        validate: (value: unknown) =>
          typeof value !== 'string' || !value.includes('\u0000'),
        defaultMessage: (args) =>
          `${args?.property ?? 'the text'} must not contain the character U+0000`,
      },
    },
    options,
  );
}

/** A date and time with its offset, as RFC 3339 writes it: `2026-11-26T09:30:00Z`. */
const DATE_TIME =
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/** Whether `text` is a real instant written as RFC 3339 writes one (no 30 February, no 24:00). */
export function isDateTimeText(text: string): boolean {
  return (
    DATE_TIME.test(text) &&
    isISO8601(text, { strict: true, strictSeparator: true })
  );
}

/**
 * A date and time, sent as RFC 3339 text with its offset and read as a Date (an instant: the
 * offset is not kept; answers write it in UTC). Anything else, a date alone or a time without
 * its offset among them, is refused saying so.
 */
export function IsDateTime(options?: ValidationOptions): PropertyDecorator {
  return applyDecorators(
    Transform(({ value }: { value: unknown }) =>
      typeof value === 'string' && isDateTimeText(value)
        ? new Date(value)
        : value,
    ),
    ValidateBy(
      {
        name: 'isDateTime',
        validator: {
          validate: (value: unknown) =>
            value instanceof Date && !Number.isNaN(value.getTime()),
          defaultMessage: (args) =>
            describeProblem(
              args,
              'must be a date and time with its offset, such as 2026-11-26T09:30:00Z',
            ),
        },
      },
      options,
    ),
  );
}
