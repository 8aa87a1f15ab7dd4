import { answerWithin } from './redis-counters';

/** The event loop held, as by CPU pressure or a long collection. */
function holdTheLoop(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until);
}

const answeredAfter = <T>(ms: number, value: T) =>
  new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe('answerWithin', () => {
  it('passes on the answer, or the error, of a command that settles in time', async () => {
    await expect(answerWithin(answeredAfter(5, 'PONG'), 100)).resolves.toBe(
      'PONG',
    );
    await expect(
      answerWithin(Promise.reject(new Error('NOPERM')), 100),
    ).rejects.toThrow('NOPERM');
  });

  it('fails a command that is not answered, after its timeout', async () => {
    const started = Date.now();
    await expect(answerWithin(new Promise(() => {}), 50)).rejects.toThrow(
      'no answer within 50 ms',
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);
  });

  it('takes an answer that came while the loop was busy, though its timer ran first', async () => {
    // due at 100 ms, fired at 140 (not late enough for more time): the answer, due at 110,
    // is there to be read in the same turn of the loop
    const answered = answerWithin(answeredAfter(110, 'PONG'), 100);
    holdTheLoop(140);
    await expect(answered).resolves.toBe('PONG');
  });

  it('gives a command whose timer fired late one more timeout from then, and no more', async () => {
    // due at 50 ms, fired at 150: it had 50 ms of the loop's listening, not 150
    const answered = answerWithin(answeredAfter(180, 'PONG'), 50);
    holdTheLoop(150);
    await expect(answered).resolves.toBe('PONG');
    const started = Date.now();
    const unanswered = answerWithin(new Promise(() => {}), 50);
    holdTheLoop(150);
    await expect(unanswered).rejects.toThrow('no answer within 50 ms');
    expect(Date.now() - started).toBeLessThan(150 + 3 * 50);
  });
});
