import type { INestApplication } from '@nestjs/common';
import {
  DocumentBuilder,
  SwaggerModule,
  type OpenAPIObject,
} from '@nestjs/swagger';
import type { AppConfig } from '../config/app.config';

export const BEARER_AUTH = 'bearerAuth';

/** The service's OpenAPI 3.1 document, generated from its controllers and DTOs. */
export function buildOpenApiDocument(
  app: INestApplication,
  config: AppConfig,
): OpenAPIObject {
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setOpenAPIVersion('3.1.0')
      .setTitle('OpenAPI Plant Store')
      .setDescription(
        'A sample API that uses a plant store as an example to demonstrate features in the OpenAPI specification',
      )
      .setVersion('1.0.0')
      .addServer(config.publicBaseUrl, 'The plant store service')
      // addSecurity, not addBearerAuth, which would declare the opaque tokens to be JWTs
      .addSecurity(BEARER_AUTH, {
        type: 'http',
        scheme: 'bearer',
        description:
          'An API token (pst_...) issued by `node dist/cli.js tokens create`',
      })
      .addSecurityRequirements(BEARER_AUTH)
      .addTag('plants', 'Plants in the store')
      .addTag('health', 'Liveness and readiness probes')
      .build(),
  );
  // OpenAPI 3.1 names a license by its SPDX identifier; DocumentBuilder only knows name and url
  document.info.license = {
    name: 'MIT',
    identifier: 'MIT',
  } as typeof document.info.license;
  addPlantAddedWebhook(document);
  return document;
}

const WEBHOOK_HEADERS = [
  [
    'webhook-id',
    'The delivery id, the same on every retry: use it to drop duplicates',
  ],
  [
    'webhook-timestamp',
    'Seconds since the Unix epoch when this attempt was signed',
  ],
  [
    'webhook-signature',
    "`v1,` and the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the subscription's `whsec_` secret (Standard Webhooks)",
  ],
] as const;

/**
 * @nestjs/swagger has no decorator for OpenAPI 3.1 webhooks, so the plant-added webhook is
 * added after generation, from the NewPlant schema the generated document already holds.
 */
function addPlantAddedWebhook(document: OpenAPIObject): void {
  document.webhooks = {
    '/plant/webhook': {
      post: {
        operationId: 'plantAdded',
        summary: 'A plant was added to the store',
        description:
          'Sent to every subscription (`node dist/cli.js webhooks add --url URL`) after a plant is added, following the Standard Webhooks specification. Any 2xx answer acknowledges it; anything else is retried with exponential backoff.',
        parameters: WEBHOOK_HEADERS.map(([name, description]) => ({
          name,
          in: 'header' as const,
          required: true,
          description,
          schema: { type: 'string' as const },
        })),
        requestBody: {
          description: 'Information about a new plant in the system',
          required: true,
          content: {
            'application/json': {
              schema: { $ref: '#/components/schemas/NewPlant' },
            },
          },
        },
        responses: {
          '200': {
            description:
              'Return a 200 status to indicate that the data was received successfully',
          },
        },
        security: [],
      },
    },
  };
}

/** Swagger UI at /docs, the document at /openapi.json and /openapi.yaml; all public. */
export function serveOpenApi(
  app: INestApplication,
  document: OpenAPIObject,
): void {
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'OpenAPI Plant Store',
  });
}
