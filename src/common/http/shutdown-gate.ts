import {
  Injectable,
  Logger,
  ServiceUnavailableException,
  type INestApplication,
} from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Server } from 'node:http';

export type ShutdownOutcome = 'drained' | 'cut';

/**
 * Graceful shutdown: stop accepting, answer requests that arrive on kept-alive connections
 * with 503, let in-flight ones finish for a grace period, then cut what is left.
 */
@Injectable()
export class ShutdownGate {
  private readonly logger = new Logger(ShutdownGate.name);
  private closing = false;

  /** Express middleware, installed first: nothing new starts once shutdown has begun. */
  readonly refuseWhileClosing = (
    _request: Request,
    response: Response,
    next: NextFunction,
  ): void => {
    if (!this.closing) return next();
    response.setHeader('Connection', 'close');
    next(new ServiceUnavailableException('the service is shutting down'));
  };

  /** Closes the app; `cut` when requests were still running after `graceMs`. */
  async close(
    app: INestApplication,
    graceMs: number,
  ): Promise<ShutdownOutcome> {
    this.closing = true;
    const server = app.getHttpServer() as Server;
    let timer: NodeJS.Timeout | undefined;
    const closed = app.close().then(() => 'drained' as const);
    const graceOver = new Promise<'cut'>((resolve) => {
      timer = setTimeout(() => resolve('cut'), graceMs);
    });
    const outcome = await Promise.race([closed, graceOver]);
    clearTimeout(timer);
    if (outcome === 'cut') {
      this.logger.error(
        `requests were still running ${graceMs} ms after shutdown began; cutting them`,
      );
      server.closeAllConnections();
      await closed;
    }
    return outcome;
  }
}
