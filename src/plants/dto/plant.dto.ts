import { ApiSchema } from '@nestjs/swagger';
import { Int64Property } from '../../common/validation/int64.decorators';

/**
 * The spec's Plant, with the optional int64 id the service adds (docs/decisions.md, "What a
 * successful create returns"). Answers are the stored Plant entity; a plant without a tag has
 * no tag key, as the JSON writer leaves out every absent field.
 */
@ApiSchema({ name: 'Plant' })
export class PlantDto {
  /** Identification number of the plant */
  @Int64Property({ optional: true, example: 10042n })
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
