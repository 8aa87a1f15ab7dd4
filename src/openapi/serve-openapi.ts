import { NotFoundException, type INestApplication } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import {
  SwaggerModule,
  type OpenAPIObject,
  type ServerObject,
} from '@nestjs/swagger';
import type { AppConfig } from '../platform/config/app.config';
import {
  publicBaseUrlOf,
  requestBaseUrl,
} from '../platform/http/public-base-url';
import {
  openApiJson,
  openApiYaml,
  withNumbersForBigints,
} from './openapi-text';

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

/** Where Swagger UI (and, below it, its assets) and the two documents are served. */
export const OPENAPI_PATHS = {
  page: '/docs',
  json: '/openapi.json',
  yaml: '/openapi.yaml',
} as const;

/**
 * Swagger UI at /docs, the document at /openapi.json and /openapi.yaml; all public, and rate
 * limited like any route (BearerGuard's `admit`).
 */
export function serveOpenApi(
  app: INestApplication,
  document: OpenAPIObject,
  config: AppConfig,
): void {
  app.use(OPENAPI_PATHS.page, onlyTheDocsPage);
  app.use(`${OPENAPI_PATHS.page}/swagger-ui-init.js`, dependsOnHost);
  const texts = new DocumentTexts(document);
  const textsFor = (request: Request) =>
    texts.at(publicBaseUrlOf(request, config));
  const http = app.getHttpAdapter();
  http.get(OPENAPI_PATHS.json, (request: Request, response: Response) => {
    dependsOnHost(request, response);
    response.type('application/json').send(textsFor(request).json);
  });
  http.get(OPENAPI_PATHS.yaml, (request: Request, response: Response) => {
    dependsOnHost(request, response);
    response.type('text/yaml').send(textsFor(request).yaml);
  });
  const forSwaggerUi = withNumbersForBigints(document);
  SwaggerModule.setup(OPENAPI_PATHS.page.slice(1), app, forSwaggerUi, {
    raw: false,
    customSiteTitle: 'OpenAPI Plant Store',
    patchDocumentOnRequest: <TRequest>(request: TRequest) =>
      forThePageAt(forSwaggerUi, request as Request, config),
  });
}

/**
 * The answers that name the address they were asked at (the document's server, the docs page's
 * "Try it out"): a shared cache must key them by it, and ask again rather than serve one
 * address's answer for another.
 */
function dependsOnHost(
  _request: Request,
  response: Response,
  next?: NextFunction,
): void {
  response.setHeader('Vary', 'Host, X-Forwarded-Host, X-Forwarded-Proto');
  response.setHeader('Cache-Control', 'no-cache');
  next?.();
}

/** Stands for the server's URL in the texts, until a request names it. */
const BASE_URL_MARK = 'https://base-url.invalid/plant-store';

/**
 * The document as JSON and YAML, written once: for each request only the server's URL
 * differs, put in as a quoted string. A client inventing Host names costs a string
 * replacement each, not the document's serialization.
 */
export class DocumentTexts {
  private readonly json: string;
  private readonly yaml: string;

  constructor(document: OpenAPIObject) {
    const marked = withServerUrl(document, BASE_URL_MARK);
    this.json = openApiJson(marked);
    this.yaml = openApiYaml(marked);
  }

  at(baseUrl: string): { json: string; yaml: string } {
    // a JSON string is a YAML double-quoted scalar too
    const quoted = JSON.stringify(baseUrl);
    return {
      json: this.json.replace(`"${BASE_URL_MARK}"`, () => quoted),
      yaml: this.yaml.replace(BASE_URL_MARK, () => quoted),
    };
  }
}

/**
 * "Try it out" calls the address the page was opened on first (localhost, 127.0.0.1, a LAN
 * name, a proxy's), which the page may always reach; PUBLIC_BASE_URL, when it is another, is
 * offered second, and the CSP lets the page call it (securityHeaders).
 */
function forThePageAt(
  document: OpenAPIObject,
  request: Request,
  config: AppConfig,
): OpenAPIObject {
  const pageUrl = requestBaseUrl(request, config);
  const [server] = document.servers ?? [];
  const servers: ServerObject[] = [
    {
      ...server,
      url: pageUrl,
      description: 'The address this page was opened on',
    },
  ];
  if (config.publicBaseUrl !== undefined && config.publicBaseUrl !== pageUrl) {
    servers.push({ ...server, url: config.publicBaseUrl });
  }
  return { ...document, servers };
}

function withServerUrl(document: OpenAPIObject, url: string): OpenAPIObject {
  const [server, ...others] = document.servers ?? [];
  return server?.url === url
    ? document
    : { ...document, servers: [{ ...server, url }, ...others] };
}
