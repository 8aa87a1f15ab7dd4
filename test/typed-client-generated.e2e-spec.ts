import { testLimit } from './helpers/pace';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { dump, load } from 'js-yaml';
import { ROOT } from './helpers/service-process';
import { makeTempFolder } from './helpers/test-app';

function generateContract(...options: string[]) {
  return spawnSync(
    process.execPath,
    [join(ROOT, 'scripts', 'generate-contract.mjs'), '--check', ...options],
    { encoding: 'utf8', timeout: 110_000 },
  );
}

describe('the contract: openapi/service.yaml, the typed client (clients/typescript) and the plugin metadata they come from', () => {
  it(
    'are generated from the current document, which breaks nothing of the last release (npm run openapi:generate)',
    () => {
      // exports the served document from the build, as the generator does, and compares
      const result = generateContract();
      expect(result.error).toBeUndefined();
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
    },
    testLimit(120_000),
  );

  it(
    'are built with what the Swagger plugin finds in the current sources (src/metadata.ts)',
    () => {
      // SWC builds cannot run the plugin: its findings are generated and committed
      const result = spawnSync(
        process.execPath,
        [join(ROOT, 'scripts', 'generate-swagger-metadata.js'), '--check'],
        { encoding: 'utf8', timeout: 110_000 },
      );
      expect(result.error).toBeUndefined();
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
    },
    testLimit(120_000),
  );

  it(
    'fails, naming each change, when the document breaks a client of the last release',
    () => {
      const folder = makeTempFolder();
      try {
        const release = load(
          readFileSync(join(ROOT, 'openapi', 'releases', '1.0.0.yaml'), 'utf8'),
        ) as {
          paths: Record<string, object>;
          components: { schemas: Record<string, { required: string[] }> };
        };
        // a release that had one more operation, and a NewPlant without a required name
        release.paths['/plants/{id}/photos'] = { get: { responses: {} } };
        release.components.schemas.NewPlant.required = ['id'];
        // and one event type fewer: a module's new event is declared growth, not a break
        const delivery = release.components.schemas
          .WebhookDelivery as unknown as {
          properties: { eventType: { enum: string[] } };
        };
        delivery.properties.eventType.enum = ['plant.added'];
        writeFileSync(join(folder.path, '1.0.0.yaml'), dump(release));
        writeFileSync(join(folder.path, '0.9.0.yaml'), dump({ paths: {} }));
        const result = generateContract('--releases', folder.path);
        expect(result.stderr.trim().split('\n')).toEqual([
          'breaks clients of 1.0.0: POST /plants: Properties of `NewPlant` became required: `name`.',
          'breaks clients of 1.0.0: /plants/{id}/photos: Path `/plants/{id}/photos` was removed.',
        ]);
        expect(result.status).toBe(1);
      } finally {
        folder.remove();
      }
    },
    testLimit(120_000),
  );
});
