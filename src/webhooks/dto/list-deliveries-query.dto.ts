import { IntegerQueryProperty } from '../../common/validation/integer-query.decorator';

const DEFAULT_DELIVERIES = 20;

export class ListDeliveriesQueryDto {
  /** How many deliveries to return at most, newest first */
  @IntegerQueryProperty('limit', {
    minimum: 1,
    maximum: 100,
    defaultValue: DEFAULT_DELIVERIES,
  })
  limit: number = DEFAULT_DELIVERIES;
}
