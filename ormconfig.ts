import { join } from 'node:path';
import { readDatabaseConfig } from './src/platform/config/database.config';
import {
  createDataSourceOptions,
  ensureDatabaseFolder,
} from './src/platform/database/data-source-options';
import { PortableDataSource } from './src/platform/database/portable-data-source';

const config = readDatabaseConfig(process.env);
ensureDatabaseFolder(config);

/**
 * The TypeORM CLI's data source (`npm run migration:generate`). It finds every entity by its
 * file name, `*.entity.ts`, where the service has each module register its own with
 * TypeOrmModule.forFeature; a test (test/database-schema.slow-spec.ts) keeps the two the same.
 */
export default new PortableDataSource({
  ...createDataSourceOptions(config, { exactIntegers: false }),
  entities: [join(__dirname, 'src', '**', '*.entity.ts')],
  migrationsRun: false,
});
