import { Global, Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { databaseConfig, type DatabaseConfig } from '../config/database.config';
import {
  createDataSourceOptions,
  ensureDatabaseFolder,
} from './data-source-options';
import { DatabaseAvailability } from './database-availability';
import { PortableDataSource } from './portable-data-source';

/**
 * The one DataSource; each feature module brings its entities with TypeOrmModule.forFeature.
 * Global for DatabaseAvailability, which the exception filter and readiness share.
 */
@Global()
@Module({
  providers: [DatabaseAvailability],
  exports: [DatabaseAvailability],
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [databaseConfig.KEY],
      useFactory: (config: DatabaseConfig) => {
        const logger = new Logger('Database');
        ensureDatabaseFolder(config).forEach((note) => logger.warn(note));
        return {
          ...createDataSourceOptions(config),
          autoLoadEntities: true,
          // no retry: a database that cannot be reached at start ends the start, in one line
          retryAttempts: 0,
          toRetry: () => false,
        };
      },
      dataSourceFactory: (options) =>
        Promise.resolve(new PortableDataSource(options!)),
    }),
  ],
})
export class DatabaseModule {}
