import type { NextFunction, Request, Response } from 'express';
import { UNROUTED, type Metrics } from './metrics';

/**
 * Express middleware that times every request into `http_server_request_duration_seconds`,
 * installed first (setup-app.ts), so that answers from the shutdown gate, the rate limits and
 * the exception filter all count, with the status they went out with. The route is the
 * template that answered (`/plants/{id}`), never the raw path, whose values are unbounded.
 */
export function recordRequests(metrics: Metrics) {
  const templates = new Map<string, string>();
  const templateOf = (path: string): string => {
    let template = templates.get(path);
    if (template === undefined) {
      template = path.replace(/:(\w+)/g, '{$1}');
      templates.set(path, template);
    }
    return template;
  };
  return function timeRequest(
    request: Request,
    response: Response,
    next: NextFunction,
  ): void {
    const started = performance.now();
    metrics.activeRequests.inc();
    response.once('close', () => {
      metrics.activeRequests.dec();
      // a client that left before any answer got no status to count
      if (!response.headersSent) return;
      const route = (request.route as { path?: unknown } | undefined)?.path;
      metrics.requestDuration.observe(
        {
          http_request_method: request.method,
          http_route: typeof route === 'string' ? templateOf(route) : UNROUTED,
          http_response_status_code: response.statusCode,
        },
        (performance.now() - started) / 1000,
      );
    });
    next();
  };
}
