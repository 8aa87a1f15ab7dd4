import { ApiSchema } from '@nestjs/swagger';
import { Int64Property } from '../../../platform/common/validation';

/**
 * The spec's Plant, with the optional int64 id the service adds (docs/decisions.md, "What a
 * successful create returns"). Answers are the stored Plant entity; a plant without a tag has
 * no tag key, as the JSON writer leaves out every absent field.
 */
/** The plant id the document's examples use: one a client might choose. */
export const EXAMPLE_PLANT_ID = 10042n;

@ApiSchema({ name: 'Plant' })
export class PlantDto {
  /** Identification number of the plant */
  @Int64Property({ optional: true, example: EXAMPLE_PLANT_ID })
  id?: bigint;

  /**
   * The name of the plant
   * @example "Monstera deliciosa"
   */
  name!: string;

  /**
   * Tag that specifies the type of plant
   * @example "tropical"
   */
  tag?: string;
}
