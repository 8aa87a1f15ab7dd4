import type { Span, SpanKind, Tracer } from '@opentelemetry/api';

/** What the rest of the service sees of tracing: nothing at all unless it was started. */
export const tracing: {
  /** Set by startTracing: the service's tracer. */
  tracer?: Tracer;
  /** Ends tracing, exporting what is buffered. */
  stop?: () => Promise<void>;
  /** The active span's ids, for a log line written inside it. */
  activeIds?: () => TraceIds | undefined;
  /** SpanKind.CLIENT, for spans of calls out (statements), without importing the API here. */
  clientKind?: SpanKind;
  /**
   * Whether work no request asked for (the dispatcher's polls, retention's batches) gets spans
   * of its own: TRACES_BACKGROUND. Off, a statement outside any span is not traced.
   */
  background?: boolean;
} = {};

export interface TraceIds {
  trace_id: string;
  span_id: string;
}

/**
 * Whether the standard OpenTelemetry variables ask for traces: an OTLP endpoint (for every
 * signal, or for traces), and neither OTEL_SDK_DISABLED=true nor OTEL_TRACES_EXPORTER=none.
 */
export function tracingRequested(env: NodeJS.ProcessEnv): boolean {
  const endpoint =
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? env.OTEL_EXPORTER_OTLP_ENDPOINT;
  return (
    endpoint !== undefined &&
    endpoint !== '' &&
    env.OTEL_SDK_DISABLED?.toLowerCase() !== 'true' &&
    env.OTEL_TRACES_EXPORTER?.toLowerCase() !== 'none'
  );
}

/**
 * Runs `work` in a span named `name` when tracing is on, ending it when `work` settles (with
 * the error, if any); when off, `work` alone, at the cost of one property read. `kind` is the
 * span's (SpanKind.CLIENT for a call out); internal by default.
 */
export function traced<T>(
  name: string,
  attributes: Record<string, string | number>,
  work: (span?: Span) => Promise<T>,
  kind?: SpanKind,
): Promise<T> {
  const tracer = tracing.tracer;
  if (!tracer) return work();
  return tracer.startActiveSpan(name, { attributes, kind }, (span) =>
    work(span).then(
      (result) => {
        span.end();
        return result;
      },
      (error: unknown) => {
        span.recordException(error as Error);
        span.setStatus({ code: 2 /* SpanStatusCode.ERROR */ });
        span.end();
        throw error;
      },
    ),
  );
}
