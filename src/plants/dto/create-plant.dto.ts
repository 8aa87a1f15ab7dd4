import { ApiSchema } from '@nestjs/swagger';
import { ValidateIf } from 'class-validator';
import { Int64Property } from '../../common/validation/int64.decorators';
import { IsUnicodeString } from '../../common/validation/validators';
import { EXAMPLE_PLANT_ID } from './plant.dto';

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
  tag?: string;
}
