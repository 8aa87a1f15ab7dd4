import {
  Inject,
  Injectable,
  type CanActivate,
  type ExecutionContext,
} from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import type { Request, Response } from 'express';
import { appConfig, type AppConfig } from '../../config/app.config';
import { createJsonBodyReader } from './json-body';

/**
 * Reads and parses the body of an operation that takes one (a `@Body()` parameter) once the
 * limits and the access rule have let the request through: nobody can make the service read
 * and parse a body for an unknown route, a 401, a 403 or a 429. It never denies; a body that
 * cannot be read is left for AppValidationPipe to reject. Bodies sent to operations that take
 * none are never read; Node discards them after the answer.
 *
 * The last global guard (app.module.ts) rather than an interceptor: with any interceptor, Nest
 * wraps every request in an AsyncResource and an rxjs pipeline, which cost this service a
 * third of its throughput (bench/README.md).
 */
@Injectable()
export class JsonBodyGuard implements CanActivate {
  private readonly readBody: ReturnType<typeof createJsonBodyReader>;
  private readonly takesBody = new WeakMap<object, boolean>();

  constructor(@Inject(appConfig.KEY) config: AppConfig) {
    this.readBody = createJsonBodyReader(config.bodyLimitBytes);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.handlerTakesBody(context)) {
      const http = context.switchToHttp();
      await this.readBody(
        http.getRequest<Request>(),
        http.getResponse<Response>(),
      );
    }
    return true;
  }

  private handlerTakesBody(context: ExecutionContext): boolean {
    const handler = context.getHandler();
    let takes = this.takesBody.get(handler);
    if (takes === undefined) {
      const parameters =
        (Reflect.getMetadata(
          ROUTE_ARGS_METADATA,
          context.getClass(),
          handler.name,
        ) as Record<string, unknown> | undefined) ?? {};
      takes = Object.keys(parameters).some((key) =>
        key.startsWith(`${RouteParamtypes.BODY}:`),
      );
      this.takesBody.set(handler, takes);
    }
    return takes;
  }
}
