import type { NextFunction, Request, Response } from 'express';
import { UNROUTED, type Metrics } from './metrics';

/** A layer of express's router, as far as finding a request's route goes. */
interface RouterLayer {
  route?: { path: unknown; methods: Record<string, boolean | undefined> };
  matchers: ((path: string) => unknown)[];
}

/**
 * The path of the route `request` was for, found by express's own matchers: for an answer
 * given before routing (a 429 of the rate limits, a 503 of the token check while the database
 * is away). Only the app's own routes are ever named; a path none matches is undefined.
 */
function routeFor(request: Request): string | undefined {
  // express 5's router, whose typings name no matchers
  const { router } = request.app as unknown as {
    router?: { stack?: RouterLayer[] };
  };
  const method = request.method.toLowerCase();
  for (const { route, matchers } of router?.stack ?? []) {
    if (route === undefined || typeof route.path !== 'string') continue;
    const { methods } = route;
    const handles =
      methods[method] || methods._all || (method === 'head' && methods.get);
    if (handles && matchers.some((match) => match(request.path) !== false)) {
      return route.path;
    }
  }
  return undefined;
}

/**
 * The methods `http_request_method` names; any other (node takes about 30, WebDAV's among
 * them) is `_OTHER`, as OpenTelemetry's conventions have it, so that a client cannot grow the
 * scrape with methods no route takes.
 */
const KNOWN_METHODS = new Set([
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
]);

/** A request's method as `http_request_method` names it. */
export function methodLabel(method: string): string {
  return KNOWN_METHODS.has(method) ? method : '_OTHER';
}

/**
 * Express middleware that times every request into `http_server_request_duration_seconds`,
 * installed first (setup-app.ts), so that answers from the shutdown gate, the rate limits and
 * the exception filter all count, with the status they went out with. The route is the
 * template that answered (`/plants/{id}`), or the one the request was for when it was answered
 * before routing, never the raw path, whose values are unbounded.
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
      const routed = (request.route as { path?: unknown } | undefined)?.path;
      const route = typeof routed === 'string' ? routed : routeFor(request);
      metrics.requestDuration.observe(
        {
          http_request_method: methodLabel(request.method),
          http_route: route === undefined ? UNROUTED : templateOf(route),
          http_response_status_code: response.statusCode,
        },
        (performance.now() - started) / 1000,
      );
    });
    next();
  };
}
