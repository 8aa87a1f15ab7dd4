import { PostgresInitial1795660000000 } from './postgres/1795660000000-Initial';
import { PostgresDeliveryClaims1795661000000 } from './postgres/1795661000000-DeliveryClaims';
import { PostgresEventOutbox1795670000000 } from './postgres/1795670000000-EventOutbox';
import { PostgresDueBySubscription1795680000000 } from './postgres/1795680000000-DueBySubscription';
import { Initial1795654899005 } from './sqlite/1795654899005-Initial';
import { PlantsTagIndex1795655738339 } from './sqlite/1795655738339-PlantsTagIndex';
import { Webhooks1795656000000 } from './sqlite/1795656000000-Webhooks';
import { DeliveryClaims1795661000000 } from './sqlite/1795661000000-DeliveryClaims';
import { EventOutbox1795670000000 } from './sqlite/1795670000000-EventOutbox';
import { DueBySubscription1795680000000 } from './sqlite/1795680000000-DueBySubscription';

// Listed by class, not by glob, so ts-jest, the built service and the TypeORM CLI load the same.
// One set per engine, written from the same entities; a schema change adds a migration to each.

export const sqliteMigrations = [
  Initial1795654899005,
  PlantsTagIndex1795655738339,
  Webhooks1795656000000,
  DeliveryClaims1795661000000,
  EventOutbox1795670000000,
  DueBySubscription1795680000000,
];

export const postgresMigrations = [
  PostgresInitial1795660000000,
  PostgresDeliveryClaims1795661000000,
  PostgresEventOutbox1795670000000,
  PostgresDueBySubscription1795680000000,
];
