import {
  Injectable,
  Logger,
  ServiceUnavailableException,
  type INestApplication,
} from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Server } from 'node:http';

export type ShutdownOutcome = 'drained' | 'cut';

export interface ShutdownTimings {
  /** How long the listener keeps serving after readiness turns 503 (SHUTDOWN_DELAY). */
  delayMs: number;
  /** Then, how long in-flight requests get to finish before they are cut. */
  graceMs: number;
}

/**
 * After requests were cut, how long the rest of the close (lifecycle hooks, the database's
 * connections) may take before the process ends without it: a close that waits on something
 * that never answers must not keep a stopped service alive (it once lived 656 s to SIGKILL).
 */
export const CLOSE_AFTER_CUT_MS = 2000;

/** The 503 of every request refused while the service shuts down, readiness included. */
export const SHUTTING_DOWN_MESSAGE = 'the service is shutting down';

/**
 * Graceful shutdown, in the order a load balancer needs it:
 * 1. readiness answers 503 at once, so the balancer stops choosing this instance; for
 *    `delayMs` everything else is still served (new connections included), each answer
 *    closing its connection so that kept-alive clients move on;
 * 2. then the listener closes, requests that arrive on kept-alive connections get 503, and
 *    in-flight ones get `graceMs` to finish before what is left is cut.
 */
@Injectable()
export class ShutdownGateService {
  // the context its lines have always had, which log readers filter on
  private readonly logger = new Logger('ShutdownGate');
  private draining = false;
  private closing = false;

  /** True from SIGTERM on: readiness answers 503. */
  get isDraining(): boolean {
    return this.draining;
  }

  /** Express middleware, installed first: nothing new starts once the listener is closing. */
  readonly refuseWhileClosing = (
    _request: Request,
    response: Response,
    next: NextFunction,
  ): void => {
    if (!this.draining) return next();
    response.setHeader('Connection', 'close');
    if (!this.closing) return next();
    next(new ServiceUnavailableException(SHUTTING_DOWN_MESSAGE));
  };

  /** Closes the app; `cut` when requests were still running at the end of the grace period. */
  async close(
    app: INestApplication,
    { delayMs, graceMs }: ShutdownTimings,
  ): Promise<ShutdownOutcome> {
    this.draining = true;
    if (delayMs > 0) {
      this.logger.warn(
        `shutting down: readiness answers 503; still serving for ${delayMs} ms (SHUTDOWN_DELAY), then draining`,
      );
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
    this.closing = true;
    this.logger.warn(
      `shutting down: no longer accepting connections; in-flight requests have ${graceMs} ms`,
    );
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
      const finished = await Promise.race([
        closed.then(
          () => true,
          () => true,
        ),
        new Promise<false>((resolve) =>
          setTimeout(() => resolve(false), CLOSE_AFTER_CUT_MS).unref(),
        ),
      ]);
      if (!finished) {
        this.logger.error(
          `the service had not closed ${CLOSE_AFTER_CUT_MS} ms after its requests were cut: it ends without waiting longer (a shutdown hook or the database still waits)`,
        );
      }
    }
    return outcome;
  }
}
