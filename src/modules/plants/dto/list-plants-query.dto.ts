import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString } from 'class-validator';
import {
  Int64Property,
  IntegerQueryProperty,
} from '../../../platform/common/validation';
import { EXAMPLE_PLANT_ID } from './plant.dto';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

export class ListPlantsQueryDto {
  /** How many plants to return at most */
  @IntegerQueryProperty('limit', {
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    defaultValue: DEFAULT_PAGE_SIZE,
  })
  limit: number = DEFAULT_PAGE_SIZE;

  /** Only plants with exactly this tag */
  @ApiPropertyOptional()
  @IsOptional()
  @IsString({ message: 'tag must be a single string' })
  tag?: string;

  /** Cursor: only plants whose id is greater than this one (the last id of the previous page) */
  @Int64Property({ optional: true, in: 'query', example: EXAMPLE_PLANT_ID })
  after?: bigint;
}
