import { answerWithin } from './answer-within';

/** A command whose answer the test gives, as Redis would, when it chooses. */
function pendingCommand() {
  let answer!: (value: string) => void;
  let fail!: (reason: unknown) => void;
  const promise = new Promise<string>((resolve, reject) => {
    answer = resolve;
    fail = reject;
  });
  return { promise, answer, fail };
}

/** What a promise has come to so far, readable without awaiting it. */
function watch<T>(promise: Promise<T>) {
  const seen: { settled: boolean; value?: T; error?: Error } = {
    settled: false,
  };
  promise.then(
    (value) => Object.assign(seen, { settled: true, value }),
    (error: Error) => Object.assign(seen, { settled: true, error }),
  );
  return seen;
}

/**
 * The event loop held (CPU pressure, a long collection): the clock moves on while no timer
 * runs, so the next timer fires `ms` late.
 */
const holdTheLoop = (ms: number) => jest.setSystemTime(Date.now() + ms);

/** The loop's checks after its poll of sockets: setImmediate is left real for them. */
const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

/** Runs the timers due within `ms`, then the checks they asked for. */
async function listen(ms: number) {
  await jest.advanceTimersByTimeAsync(ms);
  await nextTurn();
}

describe('answerWithin', () => {
  beforeEach(() => jest.useFakeTimers({ now: 0, doNotFake: ['setImmediate'] }));
  afterEach(() => jest.useRealTimers());

  it('passes on the answer of a command that settles in time, and leaves no timer behind', async () => {
    const redis = pendingCommand();
    const seen = watch(answerWithin(redis.promise, 100));
    await listen(99);
    redis.answer('PONG');
    await listen(0);
    expect(seen).toEqual({ settled: true, value: 'PONG' });
    expect(jest.getTimerCount()).toBe(0);
  });

  it('passes on the error of a command that fails in time, as an Error', async () => {
    const refused = pendingCommand();
    const seenRefused = watch(answerWithin(refused.promise, 100));
    refused.fail(new Error('NOPERM'));
    const odd = pendingCommand();
    const seenOdd = watch(answerWithin(odd.promise, 100));
    odd.fail('connection reset');
    await listen(0);
    expect(seenRefused.error?.message).toBe('NOPERM');
    expect(seenOdd.error).toBeInstanceOf(Error);
    expect(seenOdd.error?.message).toBe('connection reset');
    expect(jest.getTimerCount()).toBe(0);
  });

  it('fails a command that is not answered once its timeout has passed, not before', async () => {
    const seen = watch(answerWithin(pendingCommand().promise, 50));
    await listen(49);
    expect(seen.settled).toBe(false);
    await listen(1);
    expect(seen.error?.message).toBe('no answer within 50 ms');
  });

  it('takes an answer that came while the loop was busy, though its timer ran first', async () => {
    const redis = pendingCommand();
    const seen = watch(answerWithin(redis.promise, 100));
    holdTheLoop(40);
    // the timer, due at 100, fires at 140 (not late enough for more time); the answer has
    // waited in the socket since 110 and is read in the same turn of the loop, before the check
    jest.advanceTimersToNextTimer();
    redis.answer('PONG');
    await listen(0);
    expect(seen).toEqual({ settled: true, value: 'PONG' });
  });

  it('does not count a loop held for half the timeout or less as lateness', async () => {
    const seen = watch(answerWithin(pendingCommand().promise, 50));
    holdTheLoop(25);
    await listen(50);
    expect(seen.error?.message).toBe('no answer within 50 ms');
  });

  it('gives a command whose timer fired late one more timeout from then, and no more', async () => {
    const redis = pendingCommand();
    const seen = watch(answerWithin(redis.promise, 50));
    holdTheLoop(100);
    // due at 50, fired at 150: it had 50 ms of the loop's listening, not 150
    await listen(50);
    await listen(49);
    expect(seen.settled).toBe(false);
    redis.answer('PONG');
    await listen(0);
    expect(seen).toEqual({ settled: true, value: 'PONG' });
    expect(jest.getTimerCount()).toBe(0);

    const unanswered = watch(answerWithin(pendingCommand().promise, 50));
    holdTheLoop(100);
    await listen(50);
    expect(unanswered.settled).toBe(false);
    holdTheLoop(100);
    await listen(50);
    expect(unanswered.error?.message).toBe('no answer within 50 ms');
  });

  it.each([
    [
      'an answer',
      (redis: ReturnType<typeof pendingCommand>) => redis.answer('PONG'),
    ],
    [
      'a failure',
      (redis: ReturnType<typeof pendingCommand>) =>
        redis.fail(new Error('NOPERM')),
    ],
  ])(
    'starts no more time for %s already taken when its late timer fires',
    async (_, settle) => {
      const redis = pendingCommand();
      const seen = watch(answerWithin(redis.promise, 50));
      holdTheLoop(100);
      jest.advanceTimersToNextTimer();
      settle(redis);
      await listen(0);
      expect(seen.settled).toBe(true);
      expect(jest.getTimerCount()).toBe(0);
    },
  );
});
