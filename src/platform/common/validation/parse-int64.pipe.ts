import { BadRequestException, Injectable, PipeTransform } from '@nestjs/common';
import { INT64_RANGE_MESSAGE, parseInt64Text } from '../json/int64';

/** A path parameter written as a decimal int64, read exactly as a bigint. */
@Injectable()
export class ParseInt64Pipe implements PipeTransform<string, bigint> {
  constructor(private readonly name = 'id') {}

  transform(value: string): bigint {
    const parsed = parseInt64Text(value);
    if (parsed === undefined) {
      throw new BadRequestException(
        `${this.name} in the path must be ${INT64_RANGE_MESSAGE}, got ${JSON.stringify(value)}`,
      );
    }
    return parsed;
  }
}
