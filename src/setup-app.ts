import corsHeaders from 'cors';
import type { NextFunction, Request, Response } from 'express';
import type { DynamicModule, ModuleMetadata } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import { BearerGuard } from './platform/auth/bearer.guard';
import { HEALTH_PROBE_PATHS } from './platform/health/health-probes';
import { HardenedExpressAdapter } from './platform/http/hardened-express.adapter';
import { securityHeaders } from './platform/http/security-headers';
import {
  middlewareSequence,
  type Middleware,
} from './platform/http/middleware-sequence';
import { StoreFenceService } from './platform/database/store-fence.service';
import { ShutdownGateService } from './platform/http/shutdown-gate.service';
import {
  createRequestLogger,
  createRootLogger,
  PinoNestLogger,
} from './platform/logging/pino-logger';
import { useLosslessJsonResponses } from './platform/common/json/lossless-json-response';
import { readAppConfig } from './platform/config/app.config';
import { buildOpenApiDocument } from './openapi/openapi-document';
import { OPENAPI_PATHS, serveOpenApi } from './openapi/serve-openapi';
import { Metrics } from './platform/metrics/metrics';
import { recordRequests } from './platform/metrics/request-metrics';

/** Modules added beside AppModule: a test's fixture module (test/fixtures/). */
export interface CreateAppOptions {
  imports?: ModuleMetadata['imports'];
}

/**
 * Builds the application exactly as users run it; main.ts and the e2e tests both call this, so
 * the tests exercise the same admission, serialisation and error handling. Bodies are read
 * later, by JsonBodyGuard, only for operations that take one.
 */
export async function createApp({
  imports = [],
}: CreateAppOptions = {}): Promise<NestExpressApplication> {
  const config = readAppConfig(process.env);
  const logger = createRootLogger(config);
  const root: DynamicModule | typeof AppModule =
    imports.length === 0
      ? AppModule
      : { module: AppModule, imports: [...imports] };
  // JSON from the first line, boot included: no line in Nest's own format
  const adapter = new HardenedExpressAdapter(config);
  const app = await NestFactory.create<NestExpressApplication>(root, adapter, {
    bodyParser: false,
    logger: new PinoNestLogger(logger),
    abortOnError: false,
  });
  const metrics = app.get(Metrics);
  const cors = config.corsOrigins.length > 0;
  // every request passes these, in this order, as one layer of express's router
  const front: Middleware<Request, Response>[] = [];
  if (metrics.enabled) {
    // first, so that every answer counts, the shutdown gate's and the rate limits' included
    front.push(recordRequests(metrics));
    adapter.onRefusedConnection = () =>
      metrics.rateLimitRejections.inc({ limit: 'connections' });
  }
  front.push(
    // on every answer from here on, the shutdown gate's 503 included
    securityHeaders(config.publicBaseUrl, {
      page: OPENAPI_PATHS.page,
      documents: [OPENAPI_PATHS.json, OPENAPI_PATHS.yaml],
    }),
    app.get(ShutdownGateService).refuseWhileClosing,
    createRequestLogger(logger, HEALTH_PROBE_PATHS),
  );
  if (cors) {
    front.push(
      corsHeaders({
        origin: config.corsOrigins,
        // a browser sends what the API reads, and reads what it answers: keys, versions
        allowedHeaders: [
          'Authorization',
          'Content-Type',
          'X-Request-Id',
          'Idempotency-Key',
          'If-Match',
          'If-None-Match',
        ],
        exposedHeaders: [
          'Link',
          'Location',
          'ETag',
          'Idempotent-Replayed',
          'X-Request-Id',
          'Retry-After',
          'WWW-Authenticate',
        ],
        // a preflight goes on to admission, so that it is counted like any request (and its
        // 429 carries the CORS headers set here); answerPreflight then ends it
        preflightContinue: true,
      }),
    );
  }
  // every request but the health probes, before routing: 404s and the docs are limited too
  front.push(app.get(BearerGuard).admit);
  if (cors) front.push(answerPreflight);
  // an admitted write, while the store moves to another database: 503 (store-fence.service.ts)
  front.push(app.get(StoreFenceService).refuseWritesWhileMoving);
  app.disable('x-powered-by');
  // who the client is (rate limits, blocks, logs) and how it reached us (links, the document)
  app.set('trust proxy', config.trustProxy);
  app.use(middlewareSequence(front));
  // answers are small and not cached; hashing each one for an ETag is wasted work
  app.set('etag', false);
  useLosslessJsonResponses(app.getHttpAdapter().getInstance());
  serveOpenApi(app, await buildOpenApiDocument(app, config), config);
  return app;
}

/** The end of a CORS preflight, once it is admitted: 204 with the headers cors set. */
function answerPreflight(
  request: Request,
  response: Response,
  next: NextFunction,
): void {
  if (
    request.method === 'OPTIONS' &&
    request.headers['access-control-request-method'] !== undefined
  ) {
    response.status(204).setHeader('Content-Length', '0');
    response.end();
    return;
  }
  next();
}
