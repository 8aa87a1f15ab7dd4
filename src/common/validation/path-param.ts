import { Param, type PipeTransform } from '@nestjs/common';
import { ApiParam } from '@nestjs/swagger';
import type { SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';

/**
 * A required path parameter read by `pipe` and documented with `schema`, in one decorator, so
 * that what the handler accepts and what the document says cannot drift apart.
 */
export function PathParam(
  name: string,
  pipe: PipeTransform<string, unknown>,
  schema: SchemaObject,
  description: string,
): ParameterDecorator {
  return (target, propertyKey, index) => {
    Param(name, pipe)(target, propertyKey, index);
    const method = propertyKey as string | symbol;
    ApiParam({ name, description, required: true, schema })(
      target,
      method,
      Object.getOwnPropertyDescriptor(target, method)!,
    );
  };
}
