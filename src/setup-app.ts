import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { AppModule } from './app.module';
import {
  createRequestLogger,
  createRootLogger,
  PinoNestLogger,
} from './common/logging/pino-logger';
import { createJsonBodyMiddleware } from './common/json/json-body.middleware';
import { useLosslessJsonResponses } from './common/json/lossless-json-response';
import { appConfig, type AppConfig } from './config/app.config';
import { buildOpenApiDocument, serveOpenApi } from './openapi/openapi-document';

/**
 * Builds the application exactly as users run it; main.ts and the e2e tests both call this, so
 * the tests exercise the same body parsing, serialisation and error handling.
 */
export async function createApp(): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(AppModule, {
    bodyParser: false,
    bufferLogs: true,
    abortOnError: false,
  });
  const config = app.get<AppConfig>(appConfig.KEY);
  const logger = createRootLogger(config);
  app.useLogger(new PinoNestLogger(logger));
  app.disable('x-powered-by');
  // answers are small and not cached; hashing each one for an ETag is wasted work
  app.set('etag', false);
  app.use(createRequestLogger(logger));
  app.use(...createJsonBodyMiddleware(config.bodyLimitBytes));
  useLosslessJsonResponses(app.getHttpAdapter().getInstance());
  serveOpenApi(app, buildOpenApiDocument(app, config));
  return app;
}
