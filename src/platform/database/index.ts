/** Both engines behind one API: columns, statements, transactions, errors, the clock and the fence. */
export {
  Int64Column,
  Int64PrimaryColumn,
  SmallIntegerColumn,
  VersionNumberColumn,
} from './columns';
export { createDataSourceOptions } from './data-source-options';
export { DatabaseAvailabilityService } from './database-availability.service';
export {
  DatabaseClockService,
  STORED_TIME_SLACK_MS,
} from './database-clock.service';
export {
  DatabaseBusyError,
  DuplicateKeyError,
  isDatabaseBusy,
  isDatabaseUnavailable,
  isUniqueViolation,
} from './database-errors';
export { EntitySql } from './entity-sql';
export { PortableDataSource } from './portable-data-source';
export { findForUpdate, LockingTransaction } from './row-locks';
export { StoreFenceService } from './store-fence.service';
