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
  return document;
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
