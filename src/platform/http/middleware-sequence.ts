import type { IncomingMessage, ServerResponse } from 'node:http';

export type Middleware<
  Request extends IncomingMessage = IncomingMessage,
  Response extends ServerResponse = ServerResponse,
> = (
  request: Request,
  response: Response,
  next: (error?: unknown) => void,
) => void;

/**
 * Several middlewares as one: each runs when the one before calls `next()`, an error skips the
 * rest and goes to the outer `next`, as express would do with a layer each. Express's router
 * spends more on a layer (matching its path, restoring the request's URL, wrapping the call)
 * than most of ours spend on their work, and every request passes them all (bench/README.md,
 * "Issue 38").
 */
export function middlewareSequence<
  Request extends IncomingMessage,
  Response extends ServerResponse,
>(
  steps: readonly Middleware<Request, Response>[],
): Middleware<Request, Response> {
  return (request, response, done) => {
    let index = 0;
    const next = (error?: unknown): void => {
      if (error !== undefined) return done(error);
      const step = steps[index++];
      if (!step) return done();
      try {
        step(request, response, next);
      } catch (thrown) {
        done(thrown);
      }
    };
    next();
  };
}
