import type { EngineConfig } from './engine-dependencies';
import type { Lane } from './delivery-store';

/**
 * How long past its timeout a claimed attempt may still be recording its outcome. A claim left
 * by an instance that died is free again after timeout + margin.
 */
export const CLAIM_MARGIN_MS = 2_000;

/**
 * Of that margin, what an attempt must still have left past its timeout to start: time to
 * record its outcome within its claim. An attempt claimed ahead starts within the rest
 * (aheadDepth), or is given back; one that starts later would record its outcome, if at all,
 * after its claim ran out, and be sent again.
 */
export const RECORDING_MARGIN_MS = CLAIM_MARGIN_MS / 2;

/**
 * Attempts claimed ahead of a lane's slots, at most, as a multiple of the attempts it may have
 * in flight. A lane claims as many ahead as it is expected to start within half its claim's
 * margin (aheadDepth): each then starts as one of its attempts is answered, not at the next
 * poll, with most of its margin left.
 */
export const CLAIM_AHEAD_FACTOR = 12;

/** How far one answer moves a receiver's recent answer time (an exponential average). */
const ANSWER_TIME_WEIGHT = 0.3;

/** Receivers whose answer times an instance keeps: more than the subscriptions it may have. */
const ANSWER_TIMES_KEPT = 1000;

/**
 * Each lane's pace, as this instance timed its receiver's answers: how many attempts it may
 * have in flight, and how many it claims ahead of them.
 */
export class LanePace {
  /** Each lane's receiver's recent answer time, in ms, least recently used first. */
  private readonly answerTimes = new Map<string, number>();

  constructor(
    private readonly config: Pick<
      EngineConfig,
      'slowMs' | 'maxInFlightPerSubscription'
    >,
  ) {}

  /** A lane's receiver answered in `answerMs`: its recent answer time moves towards it. */
  noteAnswer(laneId: string, answerMs: number): void {
    const previous = this.answerTimes.get(laneId);
    this.answerTimes.delete(laneId);
    this.answerTimes.set(
      laneId,
      previous === undefined
        ? answerMs
        : previous + ANSWER_TIME_WEIGHT * (answerMs - previous),
    );
    if (this.answerTimes.size > ANSWER_TIMES_KEPT) {
      this.answerTimes.delete(this.answerTimes.keys().next().value!);
    }
  }

  /**
   * A receiver that has not failed since its last success (`failing`: this instance counted
   * a failure since) and answers within WEBHOOKS_SLOW.
   */
  isQuick(lane: Lane, failing: boolean): boolean {
    const answerMs = this.answerTimes.get(lane.id);
    return (
      lane.receiver.consecutiveFailures === 0 &&
      !failing &&
      (answerMs === undefined || answerMs <= this.config.slowMs)
    );
  }

  /**
   * The most attempts a lane may have in flight here: WEBHOOKS_MAX_IN_FLIGHT_PER_SUBSCRIPTION
   * while its receiver answers within WEBHOOKS_SLOW, fewer in proportion past it (twice as
   * slow, half as many; one at least), so that slowness costs a receiver throughput smoothly
   * and holds fewer slots, never a pause. Answer times are timed from when the request was
   * written (webhook-sender.ts): the service's own queueing never counts against a receiver.
   */
  limit(laneId: string): number {
    const { maxInFlightPerSubscription, slowMs } = this.config;
    const answerMs = this.answerTimes.get(laneId);
    if (answerMs === undefined || answerMs <= slowMs) {
      return maxInFlightPerSubscription;
    }
    return Math.max(
      1,
      Math.floor((maxInFlightPerSubscription * slowMs) / answerMs),
    );
  }

  /**
   * How many attempts a lane claims ahead: those its slots start, one answer at a time, within
   * what a claim's margin leaves past RECORDING_MARGIN_MS, CLAIM_AHEAD_FACTOR times its limit at
   * most; none before its receiver has answered.
   */
  aheadDepth(laneId: string): number {
    const answerMs = this.answerTimes.get(laneId);
    if (answerMs === undefined) return 0;
    const rounds = Math.min(
      CLAIM_AHEAD_FACTOR,
      Math.floor(
        (CLAIM_MARGIN_MS - RECORDING_MARGIN_MS) / Math.max(1, answerMs),
      ),
    );
    return this.limit(laneId) * rounds;
  }
}
