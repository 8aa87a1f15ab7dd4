/** Timers as a loop uses them: the process's own, or a simulation's clock. */
export interface Timers {
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

/** The process's timers; they never keep it alive, shutdown stops the loops. */
export const PROCESS_TIMERS: Timers = {
  set: (run, ms) => setTimeout(run, ms).unref(),
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface PollingLoopOptions {
  /**
   * One turn of the work (an async function): says how many ms to wait before the next. It is
   * handed the loop's signal, aborted by stop().
   */
  turn: (signal: AbortSignal) => Promise<number>;
  /** A turn that failed: deal with the error, and say how many ms to wait before the next. */
  failed: (error: unknown) => number;
  timers?: Timers;
}

/**
 * The one loop periodic work runs in on an instance: periodic jobs (JobLoop), event handlers
 * (HandlerLoop) and the webhook dispatcher (DispatchLoop). One turn at a time, the next when
 * the turn says, or sooner when its owner wakes it; a turn that fails is reported and the loop
 * goes on; `stop()` clears the timer, aborts the signal the turns are handed, and waits for
 * the turn that runs. What each turn claims, and how long it may hold it, is its owner's: the leases
 * are in the database, whose clock decides (docs/decisions.md, "Time that decides for
 * others").
 */
export class PollingLoop {
  private readonly stopping = new AbortController();
  private readonly timers: Timers;
  private timer: unknown;
  private running?: Promise<void>;
  /** Whether a turn runs: a timer that fires meanwhile (one a clock could not clear) starts none. */
  private isTurning = false;
  /** Woken while a turn ran, up to the moment the loop takes up the wait it said. */
  private wokenDuringTurn = false;

  constructor(private readonly options: PollingLoopOptions) {
    this.timers = options.timers ?? PROCESS_TIMERS;
  }

  /** Aborted once stop() is called. */
  get signal(): AbortSignal {
    return this.stopping.signal;
  }

  start(inMs = 0): void {
    this.schedule(inMs);
  }

  /**
   * A turn now, in place of the one the timer waits for; while a turn runs, the next as soon
   * as it ends, whatever wait it says. None once stopped.
   */
  wake(): void {
    if (this.signal.aborted) return;
    if (this.isTurning) {
      this.wokenDuringTurn = true;
      return;
    }
    this.timers.clear(this.timer);
    this.turn();
  }

  /** No turn starts after this, and the one running has ended when it resolves. */
  async stop(): Promise<void> {
    this.stopping.abort();
    this.timers.clear(this.timer);
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.signal.aborted) return;
    this.timers.clear(this.timer);
    this.timer = this.timers.set(() => this.turn(), Math.max(0, ms));
  }

  private turn(): void {
    // one turn at a time: a timer its clock could not clear waits for the turn's own next
    if (this.signal.aborted || this.isTurning) return;
    this.isTurning = true;
    this.wokenDuringTurn = false;
    this.running = this.options
      .turn(this.signal)
      .catch((error: unknown) => this.options.failed(error))
      .then((next) => {
        this.isTurning = false;
        this.schedule(this.wokenDuringTurn ? 0 : next);
      });
  }
}
