import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import type { Plant } from '../plant.entity';

/** The spec's Plant, with the optional int64 id the service adds (D6). */
@ApiSchema({ name: 'Plant' })
export class PlantDto {
  @ApiPropertyOptional({
    type: 'integer',
    format: 'int64',
    description: 'Identification number of the plant',
  })
  id?: bigint;

  @ApiProperty({ description: 'The name of the plant' })
  name!: string;

  @ApiPropertyOptional({ description: 'Tag that specifies the type of plant' })
  tag?: string;

  /** A plant stored without a tag has no tag key at all, never `"tag": null` (D4). */
  static fromEntity({ id, name, tag }: Plant): PlantDto {
    return tag === null ? { id, name } : { id, name, tag };
  }
}
