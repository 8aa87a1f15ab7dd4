import { context, propagation, SpanKind, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import {
  ExpressInstrumentation,
  ExpressLayerType,
} from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import {
  defaultResource,
  detectResources,
  envDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
  type Sampler,
} from '@opentelemetry/sdk-trace';
import type { IncomingMessage } from 'node:http';
import { packageVersion } from '../config/package-version';
import { tracing } from './tracing';

const HEALTH_PROBES = new Set(['/health/live', '/health/ready']);

/**
 * Traces over OTLP/HTTP (JSON) to OTEL_EXPORTER_OTLP_ENDPOINT, configured by the standard
 * OpenTelemetry variables (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER,
 * OTEL_BSP_*, OTEL_EXPORTER_OTLP_HEADERS, ...). Instrumented: incoming HTTP requests (W3C
 * `traceparent` taken from them) and the route that answered them (express), outgoing HTTP
 * (the webhook sender, which sends `traceparent`); the database statements and the webhook
 * attempts get spans of the service's own (PortableDataSource, WebhookDispatcher).
 */
export function startTracing(env: NodeJS.ProcessEnv): void {
  const version = packageVersion();
  const provider = new TracerProvider({
    resource: defaultResource()
      .merge(
        resourceFromAttributes({
          'service.name': 'plant-store',
          'service.version': version,
        }),
      )
      .merge(detectResources({ detectors: [envDetector] })),
    sampler: samplerFrom(env),
    spanProcessors: [
      new BatchSpanProcessor({
        exporter: new OTLPTraceExporter(),
        scheduledDelayMillis: numberFrom(env, 'OTEL_BSP_SCHEDULE_DELAY'),
        exportTimeoutMillis: numberFrom(env, 'OTEL_BSP_EXPORT_TIMEOUT'),
        maxQueueSize: numberFrom(env, 'OTEL_BSP_MAX_QUEUE_SIZE'),
        maxExportBatchSize: numberFrom(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE'),
      }),
    ],
  });
  context.setGlobalContextManager(new AsyncLocalStorageContextManager());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const metricsPort = Number(env.METRICS_PORT);
  registerInstrumentations({
    tracerProvider: provider,
    instrumentations: [
      new HttpInstrumentation({
        // an orchestrator's probes every few seconds, and Prometheus's scrapes, are no story
        ignoreIncomingRequestHook: (request: IncomingMessage) =>
          request.socket.localPort === metricsPort ||
          (request.method === 'GET' &&
            HEALTH_PROBES.has((request.url ?? '').split('?')[0])),
      }),
      new ExpressInstrumentation({
        // the route's handler only: a span per middleware would outnumber the work
        ignoreLayersType: [
          ExpressLayerType.MIDDLEWARE,
          ExpressLayerType.ROUTER,
        ],
      }),
    ],
  });
  tracing.tracer = provider.getTracer('plant-store', version);
  tracing.stop = () => provider.shutdown();
  tracing.activeIds = () => {
    const span = trace.getActiveSpan();
    if (!span) return undefined;
    const { traceId, spanId } = span.spanContext();
    return { trace_id: traceId, span_id: spanId };
  };
  tracing.clientKind = SpanKind.CLIENT;
  tracing.background = env.TRACES_BACKGROUND === 'true';
}

/** A non-negative number the variable holds; undefined (the SDK's default) otherwise. */
function numberFrom(env: NodeJS.ProcessEnv, name: string): number | undefined {
  const value = Number(env[name]);
  return env[name] !== undefined && Number.isFinite(value) && value >= 0
    ? value
    : undefined;
}

/**
 * OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, as the specification reads them (this SDK
 * line leaves them to its callers); parentbased_always_on by default. A caller's decision (the
 * sampled flag of its `traceparent`) is the root sampler's to make again unless
 * TRACES_FOLLOW_CALLERS is true: any client can send a sampled flag, so trusting it would let
 * anyone trace every request whatever the ratio (docs/decisions.md, "Traces").
 */
export function samplerFrom(env: NodeJS.ProcessEnv): Sampler {
  const ratio = numberFrom(env, 'OTEL_TRACES_SAMPLER_ARG') ?? 1;
  const root: Record<string, Sampler> = {
    always_on: new AlwaysOnSampler(),
    always_off: new AlwaysOffSampler(),
    traceidratio: new TraceIdRatioBasedSampler(Math.min(1, ratio)),
  };
  const name = (
    env.OTEL_TRACES_SAMPLER ?? 'parentbased_always_on'
  ).toLowerCase();
  if (name in root) return root[name];
  const parented = /^parentbased_(\w+)$/.exec(name)?.[1];
  const rootSampler = root[parented ?? 'always_on'] ?? root.always_on;
  const followCallers = env.TRACES_FOLLOW_CALLERS === 'true';
  return new ParentBasedSampler({
    root: rootSampler,
    remoteParentSampled: followCallers ? root.always_on : rootSampler,
    remoteParentNotSampled: followCallers ? root.always_off : rootSampler,
  });
}
