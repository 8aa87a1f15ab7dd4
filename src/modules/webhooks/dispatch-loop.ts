import type { DeliveryEngine } from './delivery-engine';
import { PollingLoop, type Timers } from '../../platform/jobs';
import type { EngineConfig } from './engine-dependencies';

export interface LoopOptions {
  timers: Timers;
  /** How long an idle loop waits between two polls. */
  intervalMs: number;
  /** A poll that ended well: the database answered. */
  onPolled: () => void;
  /** A poll that failed; the next one comes after the interval, as usual. */
  onError: (error: unknown) => void;
  /**
   * While true, no poll claims or makes deliveries, and what is claimed ahead is given back:
   * the store is moving (StoreFenceService).
   */
  fenced?: () => boolean;
}

/**
 * When the engine polls, each poll a turn of a PollingLoop: after WEBHOOKS_POLL_INTERVAL
 * while idle; under a backlog, as soon as a poll ends wanting more and as attempts end, once
 * enough slots are free for one poll to fill them (or enough attempts claimed ahead have taken
 * the slots of those that ended for one poll to top them up), so that a backlog drains at the
 * receivers' pace. While the store is fenced, every such wake gives back what was claimed
 * ahead at once, a poll running or not, so that a move waits for no claim it need not.
 */
export class DispatchLoop {
  private readonly loop: PollingLoop;
  /** Attempts that ended since the last poll began and were replaced by one claimed ahead. */
  private replaced = 0;
  private backlog = false;

  constructor(
    private readonly engine: DeliveryEngine,
    private readonly config: Pick<EngineConfig, 'maxInFlight'>,
    private readonly options: LoopOptions,
  ) {
    this.loop = new PollingLoop({
      timers: options.timers,
      turn: () => this.pollOnce(),
      failed: (error) => {
        if (!this.loop.signal.aborted) options.onError(error);
        return options.intervalMs;
      },
    });
  }

  start(): void {
    this.loop.start();
  }

  /** No poll starts after this, and the one running has ended when it resolves. */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** Under a backlog, a poll waits for this many free slots: one poll fills them all. */
  private refillBatch(): number {
    return Math.max(1, Math.floor(this.config.maxInFlight / 8));
  }

  /** While the store is fenced: gives back what was claimed ahead, and says so. */
  private yieldsToFence(): boolean {
    if (!this.options.fenced?.()) return false;
    void this.engine.giveBackClaimedAhead();
    return true;
  }

  /** A poll now, or as soon as the one running ends. */
  private wake(): void {
    if (!this.yieldsToFence()) this.loop.wake();
  }

  /** One poll; the next comes after the interval, unless an attempt's end wakes the loop. */
  private async pollOnce(): Promise<number> {
    if (this.yieldsToFence()) return this.options.intervalMs;
    this.replaced = 0;
    ({ backlog: this.backlog } = await this.engine.poll((replaced) =>
      this.attemptEnded(replaced),
    ));
    this.options.onPolled();
    return this.options.intervalMs;
  }

  /**
   * An attempt's slot came free. One an attempt claimed ahead took at once needs no poll: a
   * poll tops those up once a refill batch of them has started.
   */
  private attemptEnded(replaced: boolean): void {
    if (!this.backlog) return;
    if (replaced) {
      this.replaced += 1;
      if (this.replaced >= this.refillBatch()) this.wake();
      return;
    }
    const free = this.config.maxInFlight - this.engine.attemptsInFlight;
    if (free >= this.refillBatch()) this.wake();
  }
}
