import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, Max, Min } from 'class-validator';

/**
 * An optional int32 query parameter between `minimum` and `maximum` (give the property its
 * default value): validated with one message that names it and its range, and documented so.
 * Query values arrive as strings, or arrays when repeated; anything but one plain decimal
 * integer is left as it came, for the validators to reject.
 */
export function IntegerQueryProperty(
  name: string,
  {
    minimum,
    maximum,
    defaultValue,
  }: { minimum: number; maximum: number; defaultValue: number },
): PropertyDecorator {
  const message = `${name} must be an integer between ${minimum} and ${maximum}`;
  return applyDecorators(
    ApiPropertyOptional({
      type: 'integer',
      format: 'int32',
      minimum,
      maximum,
      default: defaultValue,
    }),
    Transform(({ value }: { value: unknown }) =>
      typeof value === 'string' && /^-?\d{1,10}$/.test(value)
        ? Number(value)
        : value,
    ),
    IsInt({ message }),
    Min(minimum, { message }),
    Max(maximum, { message }),
  );
}
