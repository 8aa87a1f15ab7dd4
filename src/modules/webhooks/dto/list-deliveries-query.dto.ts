import { IntegerQueryProperty } from '../../../platform/common/validation';

const DEFAULT_DELIVERIES = 20;
export const MAX_DELIVERIES_PAGE = 100;

export class ListDeliveriesQueryDto {
  /** How many deliveries to return at most, newest first */
  @IntegerQueryProperty('limit', {
    minimum: 1,
    maximum: MAX_DELIVERIES_PAGE,
    defaultValue: DEFAULT_DELIVERIES,
  })
  limit: number = DEFAULT_DELIVERIES;
}
