import type { DeliveryEngine } from './delivery-engine';
import type { Timers } from '../../platform/jobs';
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
 * When the engine polls: after WEBHOOKS_POLL_INTERVAL while idle; under a backlog, as soon as
 * a poll ends wanting more and as attempts end, once enough slots are free for one poll to
 * fill them (or enough attempts claimed ahead have taken the slots of those that ended for
 * one poll to top them up), so that a backlog drains at the receivers' pace. One poll runs at
 * a time.
 */
export class DispatchLoop {
  private timer: unknown;
  private polling = false;
  /** A slot freed while a poll ran: poll again as soon as it ends. */
  private pollAgain = false;
  /** Attempts that ended since the last poll began and were replaced by one claimed ahead. */
  private replaced = 0;
  private backlog = false;
  private stopped = false;
  /** The poll running now, which stop() waits for. */
  private running: Promise<void> | undefined;

  constructor(
    private readonly engine: DeliveryEngine,
    private readonly config: Pick<EngineConfig, 'maxInFlight'>,
    private readonly options: LoopOptions,
  ) {}

  start(): void {
    this.schedule(0);
  }

  /** No poll starts after this, and the one running has ended when it resolves. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.options.timers.clear(this.timer);
    await this.running;
  }

  /** Under a backlog, a poll waits for this many free slots: one poll fills them all. */
  private refillBatch(): number {
    return Math.max(1, Math.floor(this.config.maxInFlight / 8));
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.options.timers.clear(this.timer);
    this.timer = this.options.timers.set(() => void this.poll(), ms);
  }

  private async poll(): Promise<void> {
    if (this.stopped) return;
    if (this.options.fenced?.()) {
      void this.engine.giveBackClaimedAhead();
      this.schedule(this.options.intervalMs);
      return;
    }
    if (this.polling) {
      this.pollAgain = true;
      return;
    }
    this.polling = true;
    this.pollAgain = false;
    this.replaced = 0;
    this.running = this.pollOnce();
    await this.running;
  }

  private async pollOnce(): Promise<void> {
    try {
      ({ backlog: this.backlog } = await this.engine.poll((replaced) =>
        this.attemptEnded(replaced),
      ));
      this.options.onPolled();
    } catch (error) {
      if (!this.stopped) this.options.onError(error);
    } finally {
      this.polling = false;
      this.running = undefined;
      this.schedule(
        this.pollAgain && this.backlog ? 0 : this.options.intervalMs,
      );
    }
  }

  /**
   * An attempt's slot came free. One an attempt claimed ahead took at once needs no poll: a
   * poll tops those up once a refill batch of them has started.
   */
  private attemptEnded(replaced: boolean): void {
    if (!this.backlog) return;
    if (replaced) {
      this.replaced += 1;
      if (this.replaced >= this.refillBatch()) void this.poll();
      return;
    }
    const free = this.config.maxInFlight - this.engine.attemptsInFlight;
    if (free >= this.refillBatch()) void this.poll();
  }
}
