import type { DeliveryStore, Lane } from './delivery-store';
import type { DispatchObserver, EngineConfig } from './engine-dependencies';
import { pausedState, resumedState } from './receiver-state';

/**
 * A receiver's state moved on by the outcomes of this instance's attempts: failures counted,
 * cleared by a success, a pause after WEBHOOKS_FAILURES_BEFORE_PAUSE of them, and a probe's
 * verdict. Each change is told once (DispatchObserver), by the instance whose attempt made it.
 */
export class ReceiverOutcomes {
  /** Lanes whose failures this instance counted since it last cleared them. */
  private readonly failing = new Set<string>();

  constructor(
    private readonly store: DeliveryStore,
    private readonly config: EngineConfig,
    private readonly observer: DispatchObserver,
  ) {}

  /** Whether this instance counted a failure of the lane's receiver since it last cleared them. */
  isFailing(laneId: string): boolean {
    return this.failing.has(laneId);
  }

  /**
   * Moves the receiver on by one attempt's outcome, in the epoch the attempt began in; an
   * outcome of an older epoch changes nothing (receiver-state.ts).
   */
  async follow(
    lane: Lane,
    epoch: number,
    probe: boolean,
    failure: string | undefined,
    now: Date,
  ): Promise<void> {
    const { store, config, observer } = this;
    const id = lane.id;
    const receiver = { ...lane.receiver, epoch };
    if (probe) {
      const next =
        failure === undefined
          ? resumedState(receiver)
          : pausedState(receiver, receiver.pauseLevel + 1, now, config);
      if (!(await store.changeReceiver(id, epoch, next))) return;
      observer.receiverChanged(
        failure === undefined
          ? { to: 'resumed', subscriptionId: id }
          : {
              to: 'paused',
              subscriptionId: id,
              from: now,
              until: next.pausedUntil!,
              failedProbes: next.pauseLevel,
              error: failure,
            },
      );
      return;
    }
    if (failure === undefined) {
      // a receiver seen without failures, and none counted here since, has none to clear: no
      // statement per delivery for a healthy receiver
      if (lane.receiver.consecutiveFailures === 0 && !this.failing.has(id)) {
        return;
      }
      this.failing.delete(id);
      if (await store.clearFailures(id, epoch)) {
        observer.receiverChanged({ to: 'healthy', subscriptionId: id });
      }
      return;
    }
    const failures = await store.countFailure(id, epoch);
    if (failures === undefined) return;
    this.failing.add(id);
    if (failures < config.failuresBeforePause) {
      if (failures === 1) {
        observer.receiverChanged({
          to: 'failing',
          subscriptionId: id,
          error: failure,
        });
      }
      return;
    }
    const next = pausedState(
      { ...receiver, consecutiveFailures: failures },
      0,
      now,
      config,
    );
    // unless a success came meanwhile and cleared them
    if (
      await store.changeReceiver(id, epoch, next, config.failuresBeforePause)
    ) {
      observer.receiverChanged({
        to: 'paused',
        subscriptionId: id,
        from: now,
        until: next.pausedUntil!,
        failedProbes: 0,
        error: failure,
      });
    }
  }
}
