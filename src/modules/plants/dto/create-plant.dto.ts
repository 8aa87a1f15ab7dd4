import { ApiSchema } from '@nestjs/swagger';
import { ValidateIf } from 'class-validator';
import {
  Int64Property,
  IsUnicodeString,
  MaxUtf8Bytes,
} from '../../../platform/common/validation';
import { EXAMPLE_PLANT_ID } from './plant.dto';

/**
 * The longest tag: one a client can list by. Percent-encoded (three characters a byte at
 * worst), 4 KiB of UTF-8 is 12 KiB of query, which leaves a request line and its headers room
 * within the 16 KiB the service reads (docs/decisions.md, "name and tag").
 */
export const MAX_TAG_BYTES = 4096;

/** The spec's NewPlant: a Plant plus the id the client chooses. */
@ApiSchema({ name: 'NewPlant' })
export class CreatePlantDto {
  /** Identification number of the plant */
  @Int64Property({ example: EXAMPLE_PLANT_ID })
  id!: bigint;

  /**
   * The name of the plant
   * @example "Monstera deliciosa"
   */
  @IsUnicodeString()
  name!: string;

  /**
   * Tag that specifies the type of plant
   * @example "tropical"
   */
  // absent is fine, null is not a string (docs/decisions.md, "name and tag")
  @ValidateIf((plant: CreatePlantDto) => plant.tag !== undefined)
  @IsUnicodeString()
  @MaxUtf8Bytes(
    MAX_TAG_BYTES,
    'a tag must fit the query that lists by it (GET /plants?tag=), percent-encoded',
  )
  tag?: string;
}
