import { ApiToken } from './src/auth/api-token.entity';
import { readDatabaseConfig } from './src/config/database.config';
import {
  createDataSourceOptions,
  ensureDatabaseFolder,
} from './src/database/data-source-options';
import { PortableDataSource } from './src/database/portable-data-source';
import { OutboxEvent } from './src/events/outbox-event.entity';
import { Plant } from './src/plants/plant.entity';
import { WebhookDelivery } from './src/webhooks/webhook-delivery.entity';
import { WebhookSubscription } from './src/webhooks/webhook-subscription.entity';

/**
 * Every entity, for the TypeORM CLI (`npm run migration:generate`). The service does not read
 * this list: each module registers its entities with TypeOrmModule.forFeature, and a test
 * (test/database-schema.e2e-spec.ts) keeps the two the same.
 */
export const entities = [
  Plant,
  ApiToken,
  WebhookSubscription,
  WebhookDelivery,
  OutboxEvent,
];

const config = readDatabaseConfig(process.env);
ensureDatabaseFolder(config);

export default new PortableDataSource({
  ...createDataSourceOptions(config, { exactIntegers: false }),
  entities,
  migrationsRun: false,
});
