import type { IncomingMessage, ServerResponse } from 'node:http';
import { middlewareSequence, type Middleware } from './middleware-sequence';

const request = {} as IncomingMessage;
const response = {} as ServerResponse;

/** A step that records its name, then calls next as `then` says. */
function step(
  name: string,
  calls: string[],
  then: (next: (error?: unknown) => void) => void = (next) => next(),
): Middleware {
  return (_request, _response, next) => {
    calls.push(name);
    then(next);
  };
}

describe('middlewareSequence', () => {
  it('runs every step in order, then the outer next with no error', () => {
    const calls: string[] = [];
    const done = jest.fn();
    middlewareSequence([step('a', calls), step('b', calls), step('c', calls)])(
      request,
      response,
      done,
    );
    expect(calls).toEqual(['a', 'b', 'c']);
    expect(done).toHaveBeenCalledTimes(1);
    expect(done).toHaveBeenCalledWith();
  });

  it('stops where a step answers without calling next', () => {
    const calls: string[] = [];
    const done = jest.fn();
    middlewareSequence([
      step('a', calls),
      step('answers', calls, () => undefined),
      step('c', calls),
    ])(request, response, done);
    expect(calls).toEqual(['a', 'answers']);
    expect(done).not.toHaveBeenCalled();
  });

  it('skips the rest and passes an error on, whether given to next or thrown', () => {
    const error = new Error('refused');
    for (const failing of [
      step('fails', [], (next) => next(error)),
      step('fails', [], () => {
        throw error;
      }),
    ]) {
      const calls: string[] = [];
      const done = jest.fn();
      middlewareSequence([step('a', calls), failing, step('c', calls)])(
        request,
        response,
        done,
      );
      expect(calls).toEqual(['a']);
      expect(done).toHaveBeenCalledTimes(1);
      expect(done).toHaveBeenCalledWith(error);
    }
  });

  it('goes on when a step calls next later, as admission does once the counters answer', async () => {
    const calls: string[] = [];
    const finished = new Promise<unknown[]>((resolve) => {
      middlewareSequence([
        step('a', calls),
        step('later', calls, (next) => setImmediate(next)),
        step('c', calls),
      ])(request, response, (...args: unknown[]) => resolve(args));
    });
    expect(calls).toEqual(['a', 'later']);
    await expect(finished).resolves.toEqual([]);
    expect(calls).toEqual(['a', 'later', 'c']);
  });

  it('calls the outer next at once when there are no steps', () => {
    const done = jest.fn();
    middlewareSequence([])(request, response, done);
    expect(done).toHaveBeenCalledWith();
  });
});
