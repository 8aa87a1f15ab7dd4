import { ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';
import type { Plant } from '../plant.entity';

/** The spec's Plant, with the optional int64 id the service adds (D6). */
@ApiSchema({ name: 'Plant' })
export class PlantDto {
  /** Identification number of the plant */
  @ApiPropertyOptional({ type: 'integer', format: 'int64' })
  id?: bigint;

  /** The name of the plant */
  name!: string;

  /** Tag that specifies the type of plant */
  tag?: string;

  /** A plant stored without a tag has no tag key at all, never `"tag": null` (D4). */
  static fromEntity({ id, name, tag }: Plant): PlantDto {
    return tag === null ? { id, name } : { id, name, tag };
  }
}
