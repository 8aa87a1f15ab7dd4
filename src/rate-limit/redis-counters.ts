import { type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import Redis from 'ioredis';
import { DependencyState } from '../logging/dependency-state';
import type { Metrics } from '../metrics/metrics';
import { answerWithin } from './answer-within';
import type {
  Count,
  CounterRule,
  RateLimitCounters,
} from './rate-limit-counters';

/**
 * One hit, atomically: count it in a window that starts at the key's first hit, and past the
 * limit block the key, for `blockMs` under a key of its own, or to the window's end.
 * KEYS: counter, block. ARGV: windowMs, limit, blockMs. Returns hits, resetMs, blockedMs.
 */
const HIT_SCRIPT = `
local blocked = redis.call('PTTL', KEYS[2])
local hits = redis.call('INCR', KEYS[1])
local reset = redis.call('PTTL', KEYS[1])
if reset < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  reset = tonumber(ARGV[1])
end
if blocked < 0 then blocked = 0 end
if blocked == 0 and hits > tonumber(ARGV[2]) then
  if tonumber(ARGV[3]) > 0 then
    redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
    blocked = tonumber(ARGV[3])
  else
    blocked = reset
  end
end
return {hits, reset, blocked}
`;

interface CountingRedis extends Redis {
  hit(
    counterKey: string,
    blockKey: string,
    windowMs: number,
    limit: number,
    blockMs: number,
  ): Promise<[number, number, number]>;
}

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
 * Counters shared by every instance through Redis. Commands fail at once while Redis is away
 * (no offline queue, no retry) and when it does not answer within `timeoutMs` of the event
 * loop's listening (answerWithin), after which
 * Redis is not asked for a while (five timeouts, 1 to 30 s); RateLimiter then lets the
 * request through. Each change between reachable and not is logged once.
 */
export class RedisCounters
  implements RateLimitCounters, OnModuleInit, OnModuleDestroy
{
  private readonly redis: CountingRedis;
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
    }) as CountingRedis;
    this.redis.defineCommand('hit', { numberOfKeys: 2, lua: HIT_SCRIPT });
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

  async hit(key: string, { windowMs, limit, blockMs }: CounterRule) {
    const [hits, resetMs, blockedMs] = await this.answered(() =>
      this.redis.hit(`${key}:hits`, `${key}:block`, windowMs, limit, blockMs),
    );
    return { hits, resetMs, blockedMs } satisfies Count;
  }

  async blockedFor(key: string): Promise<number> {
    return Math.max(
      0,
      await this.answered(() => this.redis.pttl(`${key}:block`)),
    );
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
  private async answered<T>(send: () => Promise<T>): Promise<T> {
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
