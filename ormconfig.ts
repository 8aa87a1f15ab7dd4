import { DataSource } from 'typeorm';
import { readDatabaseConfig } from './src/config/database.config';
import {
  createDataSourceOptions,
  ensureDatabaseFolder,
} from './src/database/data-source-options';

const config = readDatabaseConfig(process.env);
ensureDatabaseFolder(config);

export default new DataSource({
  ...createDataSourceOptions(config),
  migrationsRun: false,
});
