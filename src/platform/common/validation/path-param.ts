import { Param, type PipeTransform } from '@nestjs/common';
import { ApiParam, type ApiParamOptions } from '@nestjs/swagger';

type ParameterSchema = Extract<ApiParamOptions, { schema: unknown }>['schema'];

/**
 * A required path parameter read by `pipe` and documented with `schema`, in one decorator, so
 * that what the handler accepts and what the document says cannot drift apart.
 */
export function PathParam(
  name: string,
  pipe: PipeTransform<string, unknown>,
  schema: ParameterSchema,
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
