import { mergeEnvFile } from '../config/environment';
import { tracingRequested } from './tracing';

// main.ts imports this first: OpenTelemetry's instrumentation patches http and express as they
// load, so it must be in place before anything loads them. When the OpenTelemetry variables
// (from the environment or .env) ask for no traces, none of it is loaded at all.
mergeEnvFile(process.env);
if (tracingRequested(process.env)) {
  // a require, not an import: loaded only when asked for (docs/observability.md, "Traces")
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  (require('./start-tracing') as typeof import('./start-tracing')).startTracing(
    process.env,
  );
}
