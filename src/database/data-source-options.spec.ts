import { readDatabaseConfig } from '../config/database.config';
import { createDataSourceOptions } from './data-source-options';

describe('createDataSourceOptions', () => {
  it("gives PostgreSQL's line in front of the pool the bounds the settings name", () => {
    const options = createDataSourceOptions(
      readDatabaseConfig({
        DATABASE_URL: 'postgres://plants@127.0.0.1:5432/plants',
        DB_POOL_SIZE: '7',
        DB_BUSY_TIMEOUT: '3s',
        DB_QUEUE_LIMIT: '40',
      }),
    );
    expect(options).toMatchObject({
      type: 'postgres',
      poolSize: 7,
      contention: { timeoutMs: 3000, limit: 40 },
    });
  });
});
