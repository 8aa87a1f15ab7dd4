import { Logger, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { databaseConfig, type DatabaseConfig } from '../config/database.config';
import {
  createDataSourceOptions,
  ensureDatabaseFolder,
} from './data-source-options';
import { PortableDataSource } from './portable-data-source';

/** The one DataSource; each feature module brings its entities with TypeOrmModule.forFeature. */
@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [databaseConfig.KEY],
      useFactory: (config: DatabaseConfig) => {
        const logger = new Logger('Database');
        ensureDatabaseFolder(config).forEach((note) => logger.warn(note));
        return {
          ...createDataSourceOptions(config),
          autoLoadEntities: true,
          retryAttempts: 0,
        };
      },
      dataSourceFactory: (options) =>
        Promise.resolve(new PortableDataSource(options!)),
    }),
  ],
})
export class DatabaseModule {}
