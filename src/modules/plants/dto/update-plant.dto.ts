import { ApiSchema } from '@nestjs/swagger';
import { ValidateIf } from 'class-validator';
import {
  IsUnicodeString,
  MaxUtf8Bytes,
} from '../../../platform/common/validation';
import { MAX_TAG_BYTES } from './create-plant.dto';

/** A change with neither field: other fields, the id among them, are never changed. */
export const NOTHING_TO_CHANGE =
  'the body changes nothing: send name, tag or both (the id never changes)';

/**
 * What `PATCH /plants/{id}` may change, as a JSON merge patch (RFC 7396): a field left out
 * stays, a tag of null is removed. The id is the plant's for good; a name is never null.
 */
@ApiSchema({ name: 'PlantChanges' })
export class UpdatePlantDto {
  /**
   * The name of the plant
   * @example "Monstera adansonii"
   */
  @ValidateIf((changes: UpdatePlantDto) => changes.name !== undefined)
  @IsUnicodeString({
    message: ({ value }) =>
      value === null
        ? 'name must not be null: leave it out to keep the name'
        : typeof value === 'string'
          ? 'name must be valid Unicode text (it contains a lone surrogate)'
          : 'name must be a string',
  })
  name?: string;

  /**
   * Tag that specifies the type of plant; null removes it
   * @example "climbing"
   */
  @ValidateIf(
    (changes: UpdatePlantDto) =>
      changes.tag !== undefined && changes.tag !== null,
  )
  @IsUnicodeString()
  @MaxUtf8Bytes(
    MAX_TAG_BYTES,
    'a tag must fit the query that lists by it (GET /plants?tag=), percent-encoded',
  )
  tag?: string | null;
}
