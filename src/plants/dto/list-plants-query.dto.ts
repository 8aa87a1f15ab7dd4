import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, Min } from 'class-validator';
import { parseInt64Text } from '../../common/json/int64';
import { IsInt64 } from '../../common/validation/validators';

export const DEFAULT_PAGE_SIZE = 100;
export const MAX_PAGE_SIZE = 1000;

const LIMIT_MESSAGE = `limit must be an integer between 1 and ${MAX_PAGE_SIZE}`;

/**
 * Query values arrive as strings (or arrays, when repeated); anything but one plain decimal
 * integer is left as it came, for the validators to reject.
 */
function toInteger({ value }: { value: unknown }): unknown {
  return typeof value === 'string' && /^-?\d{1,10}$/.test(value)
    ? Number(value)
    : value;
}

function toInt64({ value }: { value: unknown }): unknown {
  return typeof value === 'string' ? (parseInt64Text(value) ?? value) : value;
}

export class ListPlantsQueryDto {
  /** How many plants to return at most */
  @ApiPropertyOptional({
    type: 'integer',
    format: 'int32',
    minimum: 1,
    maximum: MAX_PAGE_SIZE,
    default: DEFAULT_PAGE_SIZE,
  })
  @IsOptional()
  @Transform(toInteger)
  @IsInt({ message: LIMIT_MESSAGE })
  @Min(1, { message: LIMIT_MESSAGE })
  @Max(MAX_PAGE_SIZE, { message: LIMIT_MESSAGE })
  limit: number = DEFAULT_PAGE_SIZE;

  /** Only plants with exactly this tag */
  @ApiPropertyOptional()
  @IsOptional()
  @IsString({ message: 'tag must be a single string' })
  tag?: string;

  /** Cursor: only plants whose id is greater than this one (the last id of the previous page) */
  @ApiPropertyOptional({ type: 'integer', format: 'int64' })
  @IsOptional()
  @Transform(toInt64)
  @IsInt64()
  after?: bigint;
}
