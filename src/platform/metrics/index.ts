/** The Prometheus metrics every instance exposes. */
export { Metrics, type AttemptResult } from './metrics';
