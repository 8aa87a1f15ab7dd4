import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ValidateIf } from 'class-validator';
import { INT64_MAX, INT64_MIN, parseInt64Text } from '../json/int64';
import { ParseInt64Pipe } from './parse-int64.pipe';
import { PathParam } from './path-param';
import { IsInt64 } from './validators';

/**
 * int64, with its bounds: bigints, which only the service's own document writers
 * (openapi-text.ts) can write exactly.
 */
const INT64_SCHEMA = {
  type: 'integer',
  format: 'int64',
  minimum: INT64_MIN as unknown as number,
  maximum: INT64_MAX as unknown as number,
} as const;

export interface Int64PropertyOptions {
  /** Absent is allowed (null never is); required by default. */
  optional?: boolean;
  /**
   * Where the value is read from. A JSON body gives integers as exact bigints (the lossless
   * parser), so a string there is wrong; a query string gives decimal text to read.
   */
  in?: 'body' | 'query';
  /** A value for the document's examples. */
  example?: bigint;
}

const INT64_PROPERTIES = Symbol('int64Properties');

/** Remembers that `property` of a DTO is an int64, for `int64PropertiesOf`. */
function MarkInt64(): PropertyDecorator {
  return (target, property) => {
    const owner = target.constructor;
    const marked = int64PropertiesOf(owner);
    Reflect.defineMetadata(
      INT64_PROPERTIES,
      new Set([...marked, property]),
      owner,
    );
  };
}

const NONE: ReadonlySet<string | symbol> = new Set();

/** The properties of a DTO class (and its parents) declared with `@Int64Property()`. */
export function int64PropertiesOf(type: unknown): ReadonlySet<string | symbol> {
  return (
    (typeof type === 'function' &&
      (Reflect.getMetadata(INT64_PROPERTIES, type) as
        | Set<string | symbol>
        | undefined)) ||
    NONE
  );
}

/**
 * A DTO property that is a true int64 (docs/decisions.md, "id is a true int64"): validated as
 * one, read exactly as a bigint, and documented as `integer`/`int64`. Its description comes
 * from the property's doc comment, as for every other property.
 */
export function Int64Property({
  optional = false,
  in: source = 'body',
  example,
}: Int64PropertyOptions = {}): PropertyDecorator {
  return applyDecorators(
    ApiProperty({
      ...INT64_SCHEMA,
      required: !optional,
      ...(example !== undefined && { example }),
    }),
    ...(optional
      ? [ValidateIf((_object, value: unknown) => value !== undefined)]
      : []),
    ...(source === 'query'
      ? [
          Transform(({ value }: { value: unknown }) =>
            typeof value === 'string'
              ? (parseInt64Text(value) ?? value)
              : value,
          ),
        ]
      : []),
    IsInt64(),
    MarkInt64(),
  );
}

/**
 * A path parameter that is a true int64, read exactly as a bigint (400 naming the parameter
 * otherwise) and documented as a required `integer`/`int64` path parameter.
 */
export function Int64Param(
  name: string,
  description: string,
): ParameterDecorator {
  return PathParam(name, new ParseInt64Pipe(name), INT64_SCHEMA, description);
}
