import { Initial1795654899005 } from './1795654899005-Initial';
import { PlantsTagIndex1795655738339 } from './1795655738339-PlantsTagIndex';
import { Webhooks1795656000000 } from './1795656000000-Webhooks';

/** Listed by class, not by glob, so ts-jest, the built service and the TypeORM CLI load the same. */
export const migrations = [
  Initial1795654899005,
  PlantsTagIndex1795655738339,
  Webhooks1795656000000,
];
