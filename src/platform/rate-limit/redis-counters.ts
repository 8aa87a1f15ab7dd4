import { type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import {
  RateLimiterRedis,
  type IRateLimiterOptions,
} from 'rate-limiter-flexible';
import { DependencyState } from '../logging/dependency-state';
import type { Metrics } from '../metrics/metrics';
import { answerWithin } from './answer-within';
import { RateLimitCounters } from './rate-limit-counters';

/** What a command gets while Redis is not asked: RateLimiter lets the request through. */
const NOT_ASKED = new Error('Redis failed lately: not asked');
const CLOSING = new Error(
  'the service is closing its Redis connection: not asked',
);

export interface RedisCountersOptions {
  url: string;
  /** Put before every key, so that services or test runs sharing a Redis do not meet. */
  keyPrefix: string;
  /** A command or connection attempt that takes longer fails, and the limit is not applied. */
  timeoutMs: number;
}

/**
 * Counters shared by every instance through Redis, counted by rate-limiter-flexible's atomic
 * script. Commands fail at once while Redis is away (no offline queue, no retry) and when it
 * does not answer within `timeoutMs` of the event loop's listening (answerWithin), after which
 * Redis is not asked for a while (five timeouts, 1 to 30 s); RateLimiter then lets the
 * request through. Each change between reachable and not is logged once.
 */
export class RedisCounters
  extends RateLimitCounters
  implements OnModuleInit, OnModuleDestroy
{
  private readonly redis: Redis;
  private readonly state = new DependencyState('Redis', {
    meanwhile: 'rate limits are not applied until it does',
    onReturn: 'rate limits apply',
  });
  private readonly timeoutMs: number;
  private readonly retryAfterMs: number;
  /** While Redis fails: when to ask it again; 0 while it answers. */
  private retryAt = 0;
  /** A command is asking a failing Redis whether it is back; the others do not wait for it. */
  private probing = false;
  /**
   * From the close on: requests still in flight during the shutdown's grace are not counted,
   * and the connection's end is no outage (an instance closing logged "Redis does not answer"
   * with Redis up).
   */
  private closing = false;

  constructor(
    { url, keyPrefix, timeoutMs }: RedisCountersOptions,
    metrics?: Metrics,
  ) {
    super();
    this.timeoutMs = timeoutMs;
    this.retryAfterMs = Math.min(30_000, Math.max(1000, 5 * timeoutMs));
    this.redis = new Redis(url, {
      keyPrefix,
      connectTimeout: timeoutMs,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      // disconnect() is called only when QUIT was not answered, so the socket is closed or
      // mute: it goes at once (ioredis's default waits 2 s, a timer that then keeps the
      // process alive after a close that found Redis away)
      disconnectTimeout: 0,
    });
    this.redis.on('error', (error: Error) => {
      if (!this.closing) this.state.wentAway(error);
    });
    const answers = () => this.answers;
    metrics?.gauge(
      'plant_store_redis_up',
      '1 while Redis answers the rate limits, 0 while it does not and limits are not applied',
      [],
      function () {
        this.set(answers() ? 1 : 0);
      },
    );
  }

  /** Whether Redis answered the last command it was asked. */
  get answers(): boolean {
    return this.retryAt === 0 && this.state.answers;
  }

  /**
   * Waits (at most the timeout) for the connection, so that the first requests are counted:
   * without an offline queue, a command sent before it is ready fails, and is not counted.
   */
  onModuleInit(): Promise<void> {
    if (this.redis.status === 'ready') return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.redis.off('ready', done);
        resolve();
      };
      const timer = setTimeout(done, this.timeoutMs);
      this.redis.once('ready', done);
    });
  }

  protected makeLimiter(options: IRateLimiterOptions) {
    return new RateLimiterRedis({ ...options, storeClient: this.redis });
  }

  /** The previous release's name for a key's count, so that both count together in a rollout. */
  protected override storeKey(key: string): string {
    return `${key}:hits`;
  }

  /** QUIT lets answers in flight arrive; a Redis that does not answer cannot hold the shutdown. */
  async onModuleDestroy(): Promise<void> {
    this.closing = true;
    try {
      await answerWithin(this.redis.quit(), this.timeoutMs);
    } catch {
      this.redis.disconnect();
    }
  }

  /**
   * Sends the command unless Redis failed lately. After a failure Redis is not asked for
   * `retryAfterMs`, and then by one command at a time until one is answered: during a
   * partition a request waits for a timeout once, not at every Redis call of every request.
   */
  protected override async ask<T>(send: () => Promise<T>): Promise<T> {
    if (this.closing) throw CLOSING;
    const failing = this.retryAt > 0;
    if (failing && (Date.now() < this.retryAt || this.probing)) {
      throw NOT_ASKED;
    }
    this.probing = failing;
    try {
      const result = await answerWithin(send(), this.timeoutMs);
      this.retryAt = 0;
      this.state.cameBack();
      return result;
    } catch (error) {
      if (this.closing) throw error;
      this.retryAt = Date.now() + this.retryAfterMs;
      this.state.wentAway(error);
      throw error;
    } finally {
      if (failing) this.probing = false;
    }
  }
}
