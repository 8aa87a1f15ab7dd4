import { writeFileSync } from 'node:fs';
import { appConfig, type AppConfig } from '../config/app.config';
import { createApp } from '../setup-app';
import { buildOpenApiDocument } from './openapi-document';
import { openApiJson, openApiYaml } from './openapi-text';

/**
 * `npm run openapi:export [-- file]`: writes the generated document (default
 * dist/openapi.json; YAML when the file name ends in .yaml) without listening on a port or
 * touching a database file.
 */
async function exportOpenApi(target: string): Promise<void> {
  process.env.DATABASE_URL = 'sqlite::memory:';
  process.env.LOG_LEVEL ??= 'silent';
  const app = await createApp();
  try {
    const document = buildOpenApiDocument(
      app,
      app.get<AppConfig>(appConfig.KEY),
    );
    const text = target.endsWith('.yaml')
      ? openApiYaml(document)
      : `${openApiJson(document)}\n`;
    writeFileSync(target, text);
    console.log(`wrote ${target}`);
  } finally {
    await app.close();
  }
}

exportOpenApi(process.argv[2] ?? 'dist/openapi.json').catch(
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
