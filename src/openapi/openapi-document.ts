import { NotFoundException, type INestApplication } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import {
  DocumentBuilder,
  getSchemaPath,
  SwaggerModule,
  type OpenAPIObject,
} from '@nestjs/swagger';
import { SCOPE_DEFINITIONS } from '../auth/scopes';
import { ErrorBody } from '../common/errors/error-body.dto';
import type { AppConfig } from '../config/app.config';
import { EVENTS } from '../events/events';
import { EVENT_TYPE_HEADER } from '../webhooks/webhook-sender';

export const BEARER_AUTH = 'bearerAuth';

/**
 * The failures any operation can meet, declared once for the whole document (docs/decisions.md,
 * "Status codes"). 401 and 403 come with @RequireScopes, on the operations that need a token.
 */
const SERVICE_ERROR_RESPONSES = [
  {
    status: 429,
    description:
      'Rate limit hit (per token, or per client address without one); retry after Retry-After seconds',
    type: ErrorBody,
    headers: {
      'Retry-After': {
        description: 'Seconds until the limit lets requests through again',
        schema: { type: 'integer' as const },
      },
    },
  },
  {
    status: 500,
    description: 'A fault of the service itself',
    type: ErrorBody,
  },
  {
    status: 503,
    description: 'The database is unavailable',
    type: ErrorBody,
  },
];

/** The service's OpenAPI 3.1 document, generated from its controllers, DTOs and events. */
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
          'An API token (pst_...) issued by `node dist/cli.js tokens create`. Scopes: ' +
          Object.entries(SCOPE_DEFINITIONS)
            .map(([scope, { description }]) => `\`${scope}\` (${description})`)
            .join(', '),
      })
      .addSecurityRequirements(BEARER_AUTH)
      .addGlobalResponse(...SERVICE_ERROR_RESPONSES)
      .addTag('plants', 'Plants in the store')
      .addTag('webhooks', 'Subscriptions to the events the service publishes')
      .addTag('health', 'Liveness and readiness probes')
      .build(),
    { extraModels: EVENTS.map(({ payload }) => payload) },
  );
  // OpenAPI 3.1 names a license by its SPDX identifier; DocumentBuilder only knows name and url
  document.info.license = {
    name: 'MIT',
    identifier: 'MIT',
  } as typeof document.info.license;
  addWebhooks(document);
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
 * @nestjs/swagger has no decorator for OpenAPI 3.1 webhooks, so every event of the catalogue
 * (events.ts) is added after generation, with the schema of its payload DTO.
 */
function addWebhooks(document: OpenAPIObject): void {
  document.webhooks = Object.fromEntries(
    EVENTS.map((event) => [
      event.webhookName,
      {
        post: {
          operationId: event.operationId,
          summary: event.summary,
          description: `${event.description} Sent to every subscription that receives ${event.type} (\`POST /webhooks/subscriptions\`, or \`node dist/cli.js webhooks add\`), following the Standard Webhooks specification. Any 2xx answer acknowledges it; anything else is retried with exponential backoff.`,
          parameters: [
            ...WEBHOOK_HEADERS.map(([name, description]) => ({
              name,
              description,
              schema: { type: 'string' as const },
            })),
            {
              name: EVENT_TYPE_HEADER,
              description: `The event type, always \`${event.type}\` here. The body does not say it, and the signature does not cover it: see the webhook-id.`,
              schema: { type: 'string' as const, const: event.type },
            },
          ].map((parameter) => ({
            ...parameter,
            in: 'header' as const,
            required: true,
          })),
          requestBody: {
            description: event.payloadDescription,
            required: true,
            content: {
              'application/json': {
                schema: { $ref: getSchemaPath(event.payload) },
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
    ]),
  );
}

/**
 * What the docs page loads, relative to /docs. The rest of swagger-ui-dist (source maps, its
 * package.json, README and build logs: 12 MB) is not served.
 */
export const DOCS_PAGE_FILES: ReadonlySet<string> = new Set([
  '/',
  '/index.html',
  '/swagger-ui-init.js',
  '/swagger-ui.css',
  '/swagger-ui-bundle.js',
  '/swagger-ui-standalone-preset.js',
  '/favicon-32x32.png',
  '/favicon-16x16.png',
]);

function onlyTheDocsPage(
  request: Request,
  _response: Response,
  next: NextFunction,
): void {
  if (DOCS_PAGE_FILES.has(request.path)) return next();
  next(
    new NotFoundException(
      `Cannot ${request.method} ${request.baseUrl}${request.path}`,
    ),
  );
}

/**
 * Swagger UI at /docs, the document at /openapi.json and /openapi.yaml; all public, and rate
 * limited like any route (RequestAdmission).
 */
export function serveOpenApi(
  app: INestApplication,
  document: OpenAPIObject,
): void {
  app.use('/docs', onlyTheDocsPage);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'openapi.json',
    yamlDocumentUrl: 'openapi.yaml',
    customSiteTitle: 'OpenAPI Plant Store',
  });
}
