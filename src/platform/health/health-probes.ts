/**
 * The probes an orchestrator calls, often all from one address: they are never rate limited
 * (BearerGuard's `admit`), or a flood from a neighbour would have every instance restarted.
 */
export const HEALTH_PROBE_PATHS: ReadonlySet<string> = new Set([
  '/health/live',
  '/health/ready',
]);
