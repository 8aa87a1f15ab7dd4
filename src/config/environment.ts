import { readAppConfig } from './app.config';
import { readDatabaseConfig } from './database.config';
import { readWebhooksConfig } from './webhooks.config';

/**
 * Reads every variable once before anything starts, so that a bad value stops the process with
 * one line naming it (a ConfigError) rather than a framework stack trace.
 */
export function validateEnvironment(env: NodeJS.ProcessEnv): void {
  readAppConfig(env);
  readDatabaseConfig(env);
  readWebhooksConfig(env);
}
