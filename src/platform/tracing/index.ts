/** OpenTelemetry spans, when tracing is on. */
export { traced } from './tracing';
