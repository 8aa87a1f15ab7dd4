import { setTimeout as delay } from 'node:timers/promises';
import {
  parseLosslessJson,
  stringifyLosslessJson,
} from '../../platform/common/json';
import type {
  ClaimedDelivery,
  EventToSend,
  Lane,
  Settlement,
} from './delivery-store';
import type { EngineDependencies } from './engine-dependencies';
import { RECORDING_MARGIN_MS, type LanePace } from './lane-pace';
import type { ReceiverOutcomes } from './receiver-outcomes';
import { nextAttemptAt } from './retry-schedule';

/** The first wait before recording an attempt's outcome again, doubling up to the next. */
const RECORD_RETRY_MS = 100;

/** The longest wait between two tries at recording an attempt's outcome. */
export const RECORD_RETRY_MAX_MS = 1000;

/**
 * One claimed delivery's attempt, from its request to its outcome recorded: the receiver's
 * pace noted, its state moved on, the observer told.
 */
export class DeliveryAttempts {
  constructor(
    private readonly dependencies: EngineDependencies,
    private readonly pace: LanePace,
    private readonly receivers: ReceiverOutcomes,
    private readonly random: () => number,
  ) {}

  /**
   * One attempt, counted when claimed: a request sent is counted once, whoever settles it; one
   * that this instance never sent (it stopped past its claim, or is shutting down) is taken
   * back.
   */
  async run(
    delivery: ClaimedDelivery,
    lane: Lane,
    event: EventToSend | undefined,
    epoch: number,
    probe: boolean,
    freeSlot: () => void,
  ): Promise<void> {
    const { store, config, signal } = this.dependencies;
    if (!event) {
      await store.cancel(delivery);
      return;
    }
    // a whole attempt and the recording of its outcome must fit in the claim, or another
    // instance (or, after a move, the new database's) may send it again
    if (
      delivery.claimedUntil.getTime() - this.dependencies.now() <
      config.timeoutMs + RECORDING_MARGIN_MS
    ) {
      await store.withdraw(delivery);
      return;
    }
    const started = this.dependencies.now();
    const outcome = await this.dependencies.send(
      {
        url: lane.url,
        secret: lane.secret,
        id: delivery.id,
        type: event.type,
        body: deliveryBody(event),
      },
      signal,
      { subscriptionId: lane.id, number: delivery.attempts + 1 },
    );
    if (outcome.abandoned) {
      await store.withdraw(delivery);
      return;
    }
    if (signal.aborted) {
      // sent, and cut short by shutdown before its answer: counted, due again at once
      await store.settle(delivery, {
        status: 'pending',
        nextAttemptAt: new Date(this.dependencies.now()),
        lastAttemptAt: new Date(started),
        lastStatusCode: null,
        lastError: 'the service shut down before the receiver answered',
      });
      return;
    }
    const ended = new Date(this.dependencies.now());
    if (outcome.delivered) {
      this.pace.noteAnswer(
        lane.id,
        outcome.answerMs ?? ended.getTime() - started,
      );
      // the receiver is done with it: its slot is free while the outcome is recorded (a
      // failure holds its slot until it is counted, so that a failing receiver gets no more)
      if (!probe) freeSlot();
    }
    const retryAt =
      outcome.delivered || outcome.refused
        ? undefined
        : nextAttemptAt(
            delivery.attempts + 1,
            delivery.createdAt,
            ended,
            config,
            this.random,
          );
    const settlement: Settlement = {
      status: outcome.delivered ? 'delivered' : retryAt ? 'pending' : 'failed',
      nextAttemptAt: retryAt ?? ended,
      lastAttemptAt: new Date(started),
      lastStatusCode: outcome.statusCode ?? null,
      lastError: outcome.error ?? null,
    };
    const own = await this.withinClaim(delivery, () =>
      store.settle(delivery, settlement),
    );
    this.dependencies.observer.attempted(delivery, outcome, retryAt);
    // its claim ran out meanwhile: the delivery and its receiver are another instance's now
    if (!own) return;
    if (settlement.status !== 'pending') {
      this.dependencies.observer.settled(
        settlement.status === 'delivered' ? 'delivered' : 'failed',
      );
    }
    const failure = outcome.delivered ? undefined : (outcome.error ?? 'failed');
    await this.receivers.follow(lane, epoch, probe, failure, ended);
  }

  /**
   * Records what a request came to, trying again while the database does not answer and the
   * claim still holds (RECORDING_MARGIN_MS, at least, past the request): an answered
   * request is recorded once the database is back, rather than sent again once the claim runs
   * out. A settlement that did commit before its answer was lost finds the claim gone the
   * second time, and says so (false), as when the claim ran out.
   */
  private async withinClaim<T>(
    delivery: ClaimedDelivery,
    record: () => Promise<T>,
  ): Promise<T> {
    const { now, signal } = this.dependencies;
    const sleep = this.dependencies.sleep ?? delay;
    for (
      let waitMs = RECORD_RETRY_MS;
      ;
      waitMs = Math.min(2 * waitMs, RECORD_RETRY_MAX_MS)
    ) {
      try {
        return await record();
      } catch (error) {
        if (
          signal.aborted ||
          now() + waitMs >= delivery.claimedUntil.getTime()
        ) {
          throw error;
        }
        await sleep(waitMs);
      }
    }
  }
}

/**
 * The body of a delivery: the event's payload written out in the service's own JSON, integers
 * exact and absent fields left out, whatever spacing or escapes the database wrote it with.
 */
export function deliveryBody({
  payload,
}: Pick<EventToSend, 'payload'>): string {
  return stringifyLosslessJson(parseLosslessJson(payload));
}
