import {
  Injectable,
  Logger,
  ServiceUnavailableException,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import type { NextFunction, Request, Response } from 'express';
import { IsNull, Repository } from 'typeorm';
import { FENCED_WRITE_MESSAGE } from './database-errors';
import { StoreMove } from './store-move.entity';

/** How often an instance looks for a move: it turns read-only within about this long. */
export const FENCE_POLL_MS = 500;

/** How soon a client refused during a move is told to try again. */
export const MOVING_RETRY_AFTER_S = 5;

const READS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A move of the store under way or done (docs/decisions.md, "Backups and moves"), as every
 * instance sees it by looking every FENCE_POLL_MS: writes are refused with 503 and
 * `Retry-After`, reads are served, readiness stays 200, and jobs, event handlers and webhook
 * deliveries take nothing more (`writable`). The triggers the move adds once every instance had
 * time to look are what makes it certain; this makes it orderly.
 */
@Injectable()
export class StoreFenceService
  implements OnApplicationBootstrap, OnApplicationShutdown
{
  // the context its lines have always had, which log readers filter on
  private readonly logger = new Logger('StoreFence');
  private move?: Pick<StoreMove, 'target' | 'startedAt' | 'outcome'>;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    @InjectRepository(StoreMove) private readonly moves: Repository<StoreMove>,
  ) {}

  /** False from a move's start on, unless it is abandoned: this instance writes nothing itself. */
  get writable(): boolean {
    return this.move === undefined;
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.look();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Looks for a move now, and again after FENCE_POLL_MS. */
  async look(): Promise<void> {
    clearTimeout(this.timer);
    try {
      this.update(
        await this.moves.findOne({
          select: { target: true, startedAt: true, outcome: true },
          where: [{ outcome: IsNull() }, { outcome: 'moved' }],
          order: { startedAt: 'DESC' },
        }),
      );
    } catch {
      // the database's outage is told where requests meet it; the last state stays meanwhile
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.look(), FENCE_POLL_MS);
    this.timer.unref();
  }

  private update(move: StoreMove | null): void {
    const was = this.move;
    this.move = move ?? undefined;
    if (move && (!was || was.outcome !== move.outcome)) {
      this.logger.warn(
        { target: move.target, since: move.startedAt },
        move.outcome === 'moved'
          ? `the store has moved to ${move.target}: this instance serves reads only; point DATABASE_URL at the new database and restart`
          : `the store is moving to ${move.target}: writes get 503, reads are served; jobs, event handlers and webhook deliveries stop here`,
      );
    } else if (!move && was) {
      this.logger.warn(
        `the move to ${was.target} was abandoned: writes, jobs, event handlers and deliveries resume`,
      );
    }
  }

  /** Express middleware: a write is refused while the store moves, and after it moved. */
  readonly refuseWritesWhileMoving = (
    request: Request,
    response: Response,
    next: NextFunction,
  ): void => {
    if (this.move === undefined || READS.has(request.method)) return next();
    response.setHeader('Retry-After', String(MOVING_RETRY_AFTER_S));
    next(
      new ServiceUnavailableException(
        this.move.outcome === 'moved'
          ? `${FENCED_WRITE_MESSAGE}: this instance serves reads only`
          : `the plant store is moving to another database (since ${this.move.startedAt.toISOString()}): writes are refused until it is done; reads are served`,
      ),
    );
  };
}
