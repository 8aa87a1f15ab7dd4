import { writeFileSync } from 'node:fs';
import { appConfig, type AppConfig } from '../platform/config/app.config';
import { createApp } from '../setup-app';
import { buildOpenApiDocument } from './openapi-document';
import { openApiJson, openApiYaml } from './openapi-text';

/**
 * `npm run openapi:export [-- file ...]`: writes the generated document to each file (default
 * dist/openapi.json; YAML when the file name ends in .yaml) without listening on a port or
 * touching a database file. One app builds it for every file.
 */
async function exportOpenApi(targets: string[]): Promise<void> {
  process.env.DATABASE_URL = 'sqlite::memory:';
  process.env.LOG_LEVEL ??= 'silent';
  const app = await createApp();
  try {
    const document = await buildOpenApiDocument(
      app,
      app.get<AppConfig>(appConfig.KEY),
    );
    for (const target of targets) {
      const text = target.endsWith('.yaml')
        ? openApiYaml(document)
        : `${openApiJson(document)}\n`;
      writeFileSync(target, text);
      console.log(`wrote ${target}`);
    }
  } finally {
    await app.close();
  }
}

const targets = process.argv.slice(2);
exportOpenApi(targets.length > 0 ? targets : ['dist/openapi.json']).catch(
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
