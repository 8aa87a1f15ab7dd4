import {
  Inject,
  Injectable,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import type { Request, Response } from 'express';
import type { Observable } from 'rxjs';
import { appConfig, type AppConfig } from '../../config/app.config';
import { createJsonBodyReader } from './json-body';

/**
 * Reads and parses the body of an operation that takes one (a `@Body()` parameter), once the
 * limits and the guards have let the request through: nobody can make the service read and
 * parse a body for an unknown route, a 401 or a 429. Bodies sent to operations that take none
 * are never read; Node discards them after the answer.
 */
@Injectable()
export class JsonBodyInterceptor implements NestInterceptor {
  private readonly readBody: ReturnType<typeof createJsonBodyReader>;
  private readonly takesBody = new WeakMap<object, boolean>();

  constructor(@Inject(appConfig.KEY) config: AppConfig) {
    this.readBody = createJsonBodyReader(config.bodyLimitBytes);
  }

  async intercept(
    context: ExecutionContext,
    next: CallHandler,
  ): Promise<Observable<unknown>> {
    if (this.handlerTakesBody(context)) {
      const http = context.switchToHttp();
      await this.readBody(
        http.getRequest<Request>(),
        http.getResponse<Response>(),
      );
    }
    return next.handle();
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
