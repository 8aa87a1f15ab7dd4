import { Initial1795654899005 } from './1795654899005-Initial';

/** Listed by class, not by glob, so ts-jest, the built service and the TypeORM CLI load the same. */
export const migrations = [Initial1795654899005];
