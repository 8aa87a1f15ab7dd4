import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import { IsDefined, ValidateIf } from 'class-validator';
import { IsInt64, IsUnicodeString } from '../../common/validation/validators';

/** The spec's NewPlant: a Plant plus the id the client chooses. */
@ApiSchema({ name: 'NewPlant' })
export class CreatePlantDto {
  @ApiProperty({
    type: 'integer',
    format: 'int64',
    description: 'Identification number of the plant',
  })
  @IsDefined({ message: 'id is required' })
  @IsInt64()
  id!: bigint;

  @ApiProperty({ description: 'The name of the plant' })
  @IsDefined({ message: 'name is required' })
  @IsUnicodeString()
  name!: string;

  @ApiPropertyOptional({ description: 'Tag that specifies the type of plant' })
  // absent is fine, null is not a string (D4)
  @ValidateIf((plant: CreatePlantDto) => plant.tag !== undefined)
  @IsUnicodeString()
  tag?: string;
}
