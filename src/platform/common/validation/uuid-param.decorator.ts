import { BadRequestException, type PipeTransform } from '@nestjs/common';
import { isUUID } from 'class-validator';
import { PathParam } from './path-param';

/** A path parameter that must be a UUID, as the service makes them; lower-cased. */
class ParseUuidPipe implements PipeTransform<string, string> {
  constructor(private readonly name: string) {}

  transform(value: string): string {
    if (!isUUID(value)) {
      throw new BadRequestException(
        `${this.name} in the path must be a UUID, got ${JSON.stringify(value)}`,
      );
    }
    return value.toLowerCase();
  }
}

/** A UUID path parameter: checked (400 naming it otherwise) and documented as format uuid. */
export function UuidParam(
  name: string,
  description: string,
): ParameterDecorator {
  return PathParam(
    name,
    new ParseUuidPipe(name),
    { type: 'string', format: 'uuid' },
    description,
  );
}
