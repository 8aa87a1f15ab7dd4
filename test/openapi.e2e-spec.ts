import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { stringify } from 'lossless-json';
import {
  compareSchemas,
  compareWithReference,
  instantiateReference,
  loadReference,
  loadReviewed,
  REFERENCE_PATH,
  type Doc,
} from './helpers/openapi-contract';
import { appConfig, type AppConfig } from '../src/platform/config/app.config';
import { EventCatalogue } from '../src/platform/events/event-catalogue';
import { buildOpenApiDocument } from '../src/openapi/openapi-document';
import { openApiJson } from '../src/openapi/openapi-text';
import { ResponseContract } from './helpers/response-contract';
import { ROOT } from './helpers/service-process';
import { makeTempFolder, startTestApp, type TestApp } from './helpers/test-app';

// eslint-disable-next-line @typescript-eslint/no-require-imports -- a CommonJS script, shared with scripts/generate-contract.mjs
const { breakingChanges } = require('../scripts/breaking-changes.js') as {
  breakingChanges: (baseFile: string, revisionFile: string) => string[];
};

const PUBLIC_BASE_URL = 'https://plants.example.test';

/** Runs a dev tool from node_modules/.bin, quietly and offline. */
function runTool(tool: string, args: string[]) {
  const result = spawnSync(join(ROOT, 'node_modules', '.bin', tool), args, {
    cwd: ROOT,
    encoding: 'utf8',
    timeout: 60_000,
    env: {
      ...process.env,
      REDOCLY_TELEMETRY: 'off',
      REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true',
      NO_COLOR: '1',
    },
  });
  return {
    status: result.status,
    output: `${result.stdout}\n${result.stderr}`,
  };
}

describe('the OpenAPI document', () => {
  let testApp: TestApp;
  let generated: Doc;
  let reference: Doc;
  let folder: ReturnType<typeof makeTempFolder>;
  let generatedFile: string;

  beforeAll(async () => {
    testApp = await startTestApp({ env: { PUBLIC_BASE_URL } });
    const served = await testApp.http().get('/openapi.json').expect(200);
    generated = served.body as Doc;
    reference = loadReference();
    folder = makeTempFolder();
    generatedFile = join(folder.path, 'generated.json');
    // the text as served, exact int64 bounds included, for the linters
    writeFileSync(generatedFile, served.text);
  });

  afterAll(async () => {
    await testApp.close();
    folder.remove();
  });

  describe('as served', () => {
    it('is public at /openapi.json and /openapi.yaml, the same document in both', async () => {
      const yaml = await testApp.http().get('/openapi.yaml').expect(200);
      expect(yaml.headers['content-type']).toMatch(/yaml/);
      expect(load(yaml.text)).toEqual(generated);
    });

    it('is the document the app builds, which the response contract of every suite checks answers against', async () => {
      const built = await buildOpenApiDocument(
        testApp.app,
        testApp.app.get<AppConfig>(appConfig.KEY),
      );
      expect(JSON.parse(openApiJson(built))).toEqual(generated);
    });

    it('serves of swagger-ui-dist only what the page loads', async () => {
      const page = await testApp.http().get('/docs').expect(200);
      const loaded = [...page.text.matchAll(/(?:href|src)="\.?\/?([^"]+)"/g)]
        .map(([, path]) => path.replace(/^docs\//, ''))
        .filter((path) => !path.startsWith('http'));
      expect(loaded.length).toBeGreaterThanOrEqual(4);
      for (const file of loaded) {
        await testApp.http().get(`/docs/${file}`).expect(200);
      }
      for (const file of [
        'package.json',
        'README.md',
        'swagger-ui-bundle.js.map',
        'log.bundle-sizes.swagger-ui.txt',
        'index.js',
        'LICENSE',
      ]) {
        const refused = await testApp.http().get(`/docs/${file}`);
        expect([file, refused.status]).toEqual([file, 404]);
      }
    });

    it('serves Swagger UI publicly at /docs', async () => {
      const page = await testApp.http().get('/docs').redirects(1).expect(200);
      expect(page.headers['content-type']).toMatch(/^text\/html/);
      expect(page.text).toContain('swagger-ui');
    });

    it('declares OpenAPI 3.1.0, the spec title, version and MIT license', () => {
      expect(generated.openapi).toBe('3.1.0');
      expect(generated.info).toMatchObject({
        title: 'OpenAPI Plant Store',
        version: '1.0.0',
        license: { name: 'MIT', identifier: 'MIT' },
      });
    });

    it('names its server after PUBLIC_BASE_URL', () => {
      expect((generated.servers as Doc[])[0].url).toBe(PUBLIC_BASE_URL);
    });

    it("uses the spec's names: Plant, NewPlant, Error and bearerAuth", () => {
      const components = generated.components as Doc;
      expect(Object.keys(components.schemas as Doc)).toEqual(
        expect.arrayContaining(['Plant', 'NewPlant', 'Error']),
      );
      expect(components.securitySchemes).toEqual({
        bearerAuth: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
      });
      expect(generated.security).toEqual([{ bearerAuth: [] }]);
    });

    it('declares 429, 500 and 503 on every operation but the never-limited health probes, and 401 and 403 on each that needs a token', () => {
      const paths = generated.paths as Record<string, Record<string, Doc>>;
      const missing: string[] = [];
      for (const [path, item] of Object.entries(paths)) {
        for (const [method, operation] of Object.entries(item)) {
          const isPublic = JSON.stringify(operation.security) === '[]';
          const isProbe = path.startsWith('/health/');
          const expected = isProbe
            ? ['500', '503']
            : isPublic
              ? ['429', '500', '503']
              : ['401', '403', '429', '500', '503'];
          const responses = operation.responses as Record<string, Doc>;
          for (const status of expected) {
            if (!responses[status]) missing.push(`${method} ${path} ${status}`);
          }
          if (isProbe && responses['429']) {
            missing.push(
              `${method} ${path} documents 429 though never limited`,
            );
          }
          if (isPublic && (responses['401'] || responses['403'])) {
            missing.push(`${method} ${path} documents 401/403 though public`);
          }
        }
      }
      expect(missing).toEqual([]);
    });

    it('lists every event of the catalogue under webhooks, with its type header', () => {
      const webhooks = generated.webhooks as Record<string, { post: Doc }>;
      expect(
        Object.values(webhooks).map(({ post }) => {
          const header = (post.parameters as Doc[]).find(
            ({ name }) => name === 'webhook-event-type',
          );
          return `${String(post.operationId)} ${JSON.stringify((header?.schema as Doc)?.const)}`;
        }),
      ).toEqual(
        testApp.app
          .get(EventCatalogue)
          .events.map(
            ({ operationId, type }) => `${operationId} ${JSON.stringify(type)}`,
          ),
      );
      expect(Object.keys(webhooks)).toContain('/plant/webhook');
    });

    it('declares the RateLimit headers on every answer of a limited operation, and Retry-After on each 429', () => {
      const paths = generated.paths as Record<string, Record<string, Doc>>;
      const missing: string[] = [];
      for (const [path, item] of Object.entries(paths)) {
        if (path.startsWith('/health/')) continue;
        for (const [method, operation] of Object.entries(item)) {
          for (const [status, response] of Object.entries(
            operation.responses as Record<string, Doc>,
          )) {
            const headers = Object.keys((response.headers as Doc) ?? {});
            const wanted = [
              ...(/^[24]/.test(status)
                ? ['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']
                : []),
              ...(status === '429' ? ['Retry-After'] : []),
            ];
            for (const name of wanted) {
              if (!headers.includes(name))
                missing.push(`${method} ${path} ${status} ${name}`);
            }
          }
        }
      }
      expect(missing).toEqual([]);
    });

    it('bounds int64 ids exactly, in the JSON and the YAML served', async () => {
      const json = (await testApp.http().get('/openapi.json').expect(200)).text;
      const yaml = (await testApp.http().get('/openapi.yaml').expect(200)).text;
      expect(json).toContain(
        '"type":"integer","format":"int64","minimum":-9223372036854775808,"maximum":9223372036854775807',
      );
      expect(yaml).toContain('minimum: -9223372036854775808\n');
      expect(yaml).toContain('maximum: 9223372036854775807\n');
      expect(`${json}${yaml}`).not.toMatch(/9223372036854776000|__int64__/);
    });

    it('passes the OWASP API Security ruleset (.spectral-owasp.yaml), whose exceptions say why', () => {
      const { status, output } = runTool('spectral', [
        'lint',
        '--fail-severity=error',
        '--ruleset',
        join(ROOT, '.spectral-owasp.yaml'),
        generatedFile,
      ]);
      expect(output).not.toMatch(/owasp:/);
      expect(output).not.toMatch(/\b[1-9]\d* errors?\b/);
      expect(status).toBe(0);
    });

    describe('teaches', () => {
      type Schema = {
        $ref?: string;
        type?: string | string[];
        properties?: Record<string, Schema>;
        items?: Schema;
        allOf?: Schema[];
        example?: unknown;
        description?: string;
      };
      const schemas = () =>
        (generated.components as { schemas: Record<string, Schema> }).schemas;
      const resolve = (schema: Schema): Schema =>
        schema.$ref
          ? resolve(schemas()[schema.$ref.replace('#/components/schemas/', '')])
          : schema;
      /** An example of its own, or one for every property (Swagger UI builds it from those). */
      const hasExample = (given: Schema): boolean => {
        const schema = resolve(given);
        if (schema.example !== undefined) return true;
        if (schema.items) return hasExample(schema.items);
        if (schema.allOf) return schema.allOf.every(hasExample);
        const properties = Object.values(schema.properties ?? {});
        return (
          properties.length > 0 &&
          properties.every((property) => hasExample(property))
        );
      };
      const operations = () =>
        Object.entries(generated.paths as Record<string, Doc>).flatMap(
          ([path, item]) =>
            Object.entries(item).map(
              ([method, operation]) =>
                [`${method.toUpperCase()} ${path}`, operation as Doc] as const,
            ),
        );

      it('describes every field of every schema, and every parameter', () => {
        const undescribed = [
          ...Object.entries(schemas()).flatMap(([name, schema]) =>
            Object.entries(schema.properties ?? {})
              .filter(([, property]) => !resolve(property).description)
              .map(([field]) => `${name}.${field}`),
          ),
          ...operations().flatMap(([name, operation]) =>
            ((operation.parameters ?? []) as Doc[])
              .filter((parameter) => !parameter.description)
              .map((parameter) => `${name} ${String(parameter.name)}`),
          ),
        ];
        expect(undescribed).toEqual([]);
      });

      it('gives a realistic example for every schema, request body and answer', () => {
        const missing = [
          ...Object.entries(schemas())
            .filter(([, schema]) => !hasExample(schema))
            .map(([name]) => name),
          ...operations().flatMap(([name, operation]) => {
            const bodies = [
              ['request', operation.requestBody as Doc | undefined],
              ...Object.entries(operation.responses as Record<string, Doc>),
            ] as const;
            return bodies
              .map(([status, body]): [string, Doc | undefined] => [
                status,
                (body?.content as Record<string, Doc> | undefined)?.[
                  'application/json'
                ],
              ])
              .filter(
                ([, content]) =>
                  content !== undefined &&
                  !content.examples &&
                  !hasExample(content.schema as Schema),
              )
              .map(([status]) => `${name} ${status}`);
          }),
        ];
        expect(missing).toEqual([]);
        expect(schemas().Plant.properties?.name.example).toBe(
          'Monstera deliciosa',
        );
      });

      it('shows each kind of Error an operation answers, with its status', () => {
        const wrong: string[] = [];
        for (const [name, operation] of operations()) {
          for (const [status, response] of Object.entries(
            operation.responses as Record<string, Doc>,
          )) {
            const content = (
              response.content as Record<string, Doc> | undefined
            )?.['application/json'];
            if (
              (content?.schema as Schema | undefined)?.$ref !==
              '#/components/schemas/Error'
            ) {
              continue;
            }
            const examples = Object.values(
              (content!.examples ?? {}) as Record<
                string,
                { summary?: string; value: { error: number; message: string } }
              >,
            );
            if (
              examples.length === 0 ||
              !examples.every(
                (example) =>
                  example.summary &&
                  example.value.error === Number(status) &&
                  example.value.message.length > 0,
              )
            ) {
              wrong.push(`${name} ${status}`);
            }
          }
        }
        expect(wrong).toEqual([]);
        const addPlant = (generated.paths as Record<string, Doc>)['/plants']
          .post as Doc;
        const badRequest = (addPlant.responses as Record<string, Doc>)['400'];
        expect(badRequest.description).toMatch(/^unexpected error: /);
        expect(
          Object.values(
            (badRequest.content as Record<string, Doc>)['application/json']
              .examples as Record<string, { value: { message: string } }>,
          ).map((example) => example.value.message),
        ).toEqual(
          expect.arrayContaining([
            'a plant with id 10042 already exists',
            'name is required',
          ]),
        );
      });

      it('introduces tokens, ids, answers, lists and webhooks in its description', () => {
        const description = String((generated.info as Doc).description);
        expect(description).toMatch(
          /^A sample API that uses a plant store as an example to demonstrate features in the OpenAPI specification\n/,
        );
        for (const heading of [
          'Getting started',
          'Ids',
          'Answers',
          'Lists',
          'Webhooks',
        ]) {
          expect(description).toContain(`\n## ${heading}\n`);
        }
        expect(description).toContain('npm run --silent tokens -- create');
      });
    });

    it('declares the health probes public with security: []', () => {
      const paths = generated.paths as Record<string, Record<string, Doc>>;
      expect(paths['/health/live'].get.security).toEqual([]);
      expect(paths['/health/ready'].get.security).toEqual([]);
    });
  });

  describe('against the reference openapi/plant-store.yaml', () => {
    it('has every path, operation, body, response and schema of the reference, adding only what the decisions allow', () => {
      expect(
        compareWithReference(reference, generated, loadReviewed()),
      ).toEqual([]);
    });

    it('shows no breaking change in redocly diff from the reference', () => {
      // the reference as this deployment serves it: {base_url} filled in, allOf merged
      const referenceFile = join(folder.path, 'reference.json');
      writeFileSync(
        referenceFile,
        stringify(instantiateReference(reference, PUBLIC_BASE_URL)) ?? '',
      );
      // redocly diff's major changes, less the event types' declared growth
      expect(breakingChanges(referenceFile, generatedFile)).toEqual([]);
    });

    it.each([
      ['the reference', REFERENCE_PATH],
      ['the generated document', 'generated'],
    ])(
      '%s passes spectral lint (spectral:oas) with no error',
      (_label, file) => {
        const { status, output } = runTool('spectral', [
          'lint',
          '--fail-severity=error',
          '--ruleset',
          join(ROOT, '.spectral.yaml'),
          file === 'generated' ? generatedFile : file,
        ]);
        expect(output).not.toMatch(/\b[1-9]\d* errors?\b/);
        expect(status).toBe(0);
      },
    );

    it.each([
      ['the reference', REFERENCE_PATH],
      ['the generated document', 'generated'],
    ])('%s passes redocly lint', (_label, file) => {
      const { status, output } = runTool('redocly', [
        'lint',
        file === 'generated' ? generatedFile : file,
      ]);
      expect(output).toContain('Your API description is valid');
      expect(status).toBe(0);
    });
  });

  describe('the contract check itself', () => {
    function mutated(change: (document: Doc) => void): Doc {
      const copy = structuredClone(generated);
      change(copy);
      return copy;
    }
    const schema = (document: Doc, name: string) =>
      (
        (document.components as Doc).schemas as Record<
          string,
          { properties: Doc; required?: string[] }
        >
      )[name];

    it('takes an event-type list that gained a type anywhere for growth, and one that lost one for a change that breaks', () => {
      const types = (values: string[]) => ({
        type: 'string',
        enum: values,
        enumMayGrow: true,
      });
      const released = types(['plant.added', 'plant.deleted']);
      // a module's types take their place by name: garden-bed.added comes first
      expect(
        compareSchemas(
          'events[]',
          released,
          types(['garden-bed.added', 'plant.added', 'plant.deleted']),
        ),
      ).toEqual([]);
      expect(
        compareSchemas(
          'events[]',
          released,
          types(['garden-bed.added', 'plant.added']),
        ),
      ).toEqual([
        'events[]: enum differs (["garden-bed.added","plant.added"] vs ["plant.added","plant.deleted"])',
      ]);

      // the app's types, whichever modules it has, with a type added, and with one taken away
      const subscribed = (document: Doc) =>
        schema(document, 'WebhookSubscription').properties.events as Doc;
      const current = (subscribed(generated).items as Doc).enum as string[];
      const revised = (values: string[]) => {
        const document = mutated((copy) => {
          subscribed(copy).maxItems = values.length;
          (subscribed(copy).items as Doc).enum = values;
        });
        const file = join(folder.path, `revised-${values.length}.json`);
        writeFileSync(file, JSON.stringify(document));
        return breakingChanges(generatedFile, file);
      };
      expect(revised(['a-new.added', ...current])).toEqual([]);
      // the last type taken away: a client that subscribes to it is refused
      expect(revised(['a-new.added', ...current.slice(0, -1)])).not.toEqual([]);
    });

    it('reports a renamed field', () => {
      const broken = mutated((document) => {
        const newPlant = schema(document, 'NewPlant');
        newPlant.properties.title = newPlant.properties.name;
        delete newPlant.properties.name;
        newPlant.required = ['id', 'title'];
      });
      expect(compareWithReference(reference, broken)).toEqual(
        expect.arrayContaining([
          'schema NewPlant: property name is required in the reference but not in the generated document',
          'schema NewPlant: property name of the reference is missing from the generated document',
          'schema NewPlant: property title is in the generated document but not in the reference',
        ]),
      );
    });

    it('reports tag made required', () => {
      const broken = mutated((document) =>
        schema(document, 'Plant').required?.push('tag'),
      );
      expect(compareWithReference(reference, broken)).toContain(
        'schema Plant: property tag is required in the generated document but optional in the reference',
      );
    });

    it('reports id changed to int32', () => {
      const broken = mutated((document) => {
        (schema(document, 'NewPlant').properties.id as Doc).format = 'int32';
      });
      expect(compareWithReference(reference, broken)).toContain(
        'schema NewPlant.id: format is int32 in the generated document, int64 in the reference',
      );
    });

    it('reports a bound of the reference that the generated document drops or changes', () => {
      const broken = mutated((document) => {
        const limit = (
          ((document.paths as Doc)['/plants'] as Doc).get as {
            parameters: { name: string; schema: Doc }[];
          }
        ).parameters.find(({ name }) => name === 'limit')!.schema;
        delete limit.maximum;
        limit.minimum = 0;
      });
      expect(compareWithReference(reference, broken)).toEqual(
        expect.arrayContaining([
          expect.stringMatching(
            /limit.*: maximum is not set in the generated document, 1000 in the reference$/,
          ),
          expect.stringMatching(
            /limit.*: minimum is 0 in the generated document, 1 in the reference$/,
          ),
        ]),
      );
    });

    it('reports a dropped 400 response', () => {
      const broken = mutated((document) => {
        delete (
          ((document.paths as Doc)['/plants'] as Doc).post as { responses: Doc }
        ).responses['400'];
      });
      expect(compareWithReference(reference, broken)).toContain(
        'POST /plants: response 400 is missing from the generated document',
      );
    });

    it('reports an undocumented protected operation', () => {
      const broken = mutated((document) => {
        (document.paths as Doc)['/secret'] = {
          get: { responses: { 200: { description: 'x' } } },
        };
      });
      expect(compareWithReference(reference, broken)).toContain(
        'GET /secret is in the generated document but neither in the reference nor in openapi/service.yaml (only public probes may be added unreviewed)',
      );
      // a new module's operation, reviewed in openapi/service.yaml
      const reviewed = structuredClone(broken);
      expect(compareWithReference(reference, broken, reviewed)).toEqual([]);
    });

    it('flags answers whose status or body the document does not promise', () => {
      const contract = new ResponseContract(generated);
      const answer = {
        method: 'POST',
        path: '/plants',
        contentType: 'application/json',
      };
      expect(
        contract.check({ ...answer, status: 200, text: '{"id":1,"name":"x"}' }),
      ).toBeUndefined();
      expect(contract.check({ ...answer, status: 418, text: '{}' })).toMatch(
        /status 418 is not documented/,
      );
      expect(
        contract.check({ ...answer, status: 400, text: '{"statusCode":400}' }),
      ).toMatch(/does not match/);
      expect(
        contract.check({
          ...answer,
          status: 200,
          text: '{"id":1.5,"name":"x"}',
        }),
      ).toMatch(/does not match/);
      expect(
        contract.check({
          ...answer,
          path: '/nowhere',
          status: 200,
          text: '{}',
        }),
      ).toMatch(/only a 404 or 429 Error/);
    });
  });

  it('is written to a file by npm run openapi:export without listening on a port', () => {
    const target = join(folder.path, 'exported.json');
    const result = spawnSync(
      process.execPath,
      [join(ROOT, 'dist', 'openapi', 'export-openapi.js'), target],
      {
        cwd: folder.path,
        env: { PATH: process.env.PATH ?? '', PUBLIC_BASE_URL, PORT: '1' },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(result.status).toBe(0);
    expect(JSON.parse(readFileSync(target, 'utf8'))).toEqual(generated);
  });
});
