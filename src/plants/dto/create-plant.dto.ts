import { ApiProperty, ApiSchema } from '@nestjs/swagger';
import { ValidateIf } from 'class-validator';
import { IsInt64, IsUnicodeString } from '../../common/validation/validators';

/** The spec's NewPlant: a Plant plus the id the client chooses. */
@ApiSchema({ name: 'NewPlant' })
export class CreatePlantDto {
  /** Identification number of the plant */
  @ApiProperty({ type: 'integer', format: 'int64' })
  @IsInt64()
  id!: bigint;

  /** The name of the plant */
  @IsUnicodeString()
  name!: string;

  /** Tag that specifies the type of plant */
  // absent is fine, null is not a string (D4)
  @ValidateIf((plant: CreatePlantDto) => plant.tag !== undefined)
  @IsUnicodeString()
  tag?: string;
}
