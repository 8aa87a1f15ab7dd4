import type { Provider } from '@nestjs/common';
import type { Database } from 'better-sqlite3';
import type { Pool } from 'pg';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import type { BetterSqlite3Driver } from 'typeorm/driver/better-sqlite3/BetterSqlite3Driver';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import { PlantsRepository } from './plants.repository';
import { PostgresPlantsRepository } from './postgres-plants.repository';
import { SqlitePlantsRepository } from './sqlite-plants.repository';

/** The PlantsRepository of the engine TypeORM is connected to (DATABASE_URL). */
export const plantsRepositoryProvider: Provider<PlantsRepository> = {
  provide: PlantsRepository,
  inject: [getDataSourceToken()],
  useFactory: (dataSource: DataSource): PlantsRepository => {
    switch (dataSource.options.type) {
      case 'better-sqlite3':
        return new SqlitePlantsRepository(
          (dataSource.driver as BetterSqlite3Driver)
            .databaseConnection as Database,
        );
      case 'postgres':
        return new PostgresPlantsRepository(
          (dataSource.driver as PostgresDriver).master as Pool,
        );
      default:
        throw new Error(
          `no plants repository for the database type ${dataSource.options.type}`,
        );
    }
  },
};
