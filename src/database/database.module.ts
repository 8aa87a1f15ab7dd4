import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { databaseConfig, type DatabaseConfig } from '../config/database.config';
import {
  createDataSourceOptions,
  ensureDatabaseFolder,
} from './data-source-options';

@Module({
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [databaseConfig.KEY],
      useFactory: (config: DatabaseConfig) => {
        ensureDatabaseFolder(config);
        return { ...createDataSourceOptions(config), retryAttempts: 0 };
      },
    }),
  ],
})
export class DatabaseModule {}
