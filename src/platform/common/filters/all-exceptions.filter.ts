import {
  ArgumentsHost,
  Catch,
  ExceptionFilter,
  HttpException,
  Logger,
  Optional,
} from '@nestjs/common';
import type { Response } from 'express';
import {
  isDatabaseBusy,
  isDatabaseUnavailable,
  isSchemaMismatch,
} from '../../database/database-errors';
import { DatabaseAvailabilityService } from '../../database/database-availability.service';
import { SchemaCompatibilityService } from '../../database/schema-compatibility.service';
import { toErrorAnswer } from '../errors/error-answers';
import type { RequestWithId } from '../../logging/pino-logger';

/**
 * Where failures are answered: every exception of every layer (routing, guards, pipes,
 * handlers, middleware) gets the spec's Error object toErrorAnswer words
 * (common/errors/error-answers.ts), and the unforeseen are logged.
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger(AllExceptionsFilter.name);

  constructor(
    private readonly database: DatabaseAvailabilityService,
    @Optional() private readonly schema?: SchemaCompatibilityService,
  ) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const response = http.getResponse<Response>();
    const { body, headers } = toErrorAnswer(
      exception,
      http.getRequest<RequestWithId>().method,
    );
    // a 5xx the service chose (shutting down, not ready) is logged by whoever chose it, once;
    // a database away, once per outage; a busy one is no outage (the access log has each
    // 503); only the unexpected, per request, with its stack
    if (
      body.error >= 500 &&
      !(exception instanceof HttpException) &&
      !isDatabaseBusy(exception)
    ) {
      if (isDatabaseUnavailable(exception)) {
        this.database.wentAway(exception);
      } else if (isSchemaMismatch(exception)) {
        // logged once, by the look at the schema this asks readiness to take
        this.schema?.suspect();
      } else {
        const { id } = http.getRequest<RequestWithId>();
        this.logger.error(
          { reqId: id, err: exception },
          `request ${id} failed with ${body.error}`,
        );
      }
    }
    if (response.headersSent) {
      response.destroy();
      return;
    }
    response.status(body.error).set(headers).json(body);
  }
}
