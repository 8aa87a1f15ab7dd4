import {
  collectDefaultMetrics,
  Counter,
  Gauge,
  Histogram,
  Registry,
  type CollectFunction,
} from 'prom-client';

/** Seconds: from a cached read (1 ms) to the longest a request may take (REQUEST_TIMEOUT). */
const DURATION_BUCKETS = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
];

/** The `http_route` of a request answered before or without a route (a 429, a 404). */
export const UNROUTED = 'unrouted';

/** Why a request was refused with 429. */
export type RateLimitRejection =
  | 'token'
  | 'address'
  | 'rejected_tokens'
  | 'blocked_address'
  | 'connections';

/** Why a request was refused with 401 or 403. */
export type AuthenticationFailure =
  | 'missing'
  | 'not_bearer'
  | 'empty'
  | 'rejected'
  | 'insufficient_scope';

/** How one webhook attempt ended. */
export type AttemptResult =
  | 'success'
  | 'http_error'
  | 'timeout'
  | 'network_error'
  | 'refused';

/**
 * The service's Prometheus metrics, in one registry per application (through DI, so that two
 * apps in one process, as in the tests, never share counts). Instruments that read the
 * database do so only when scraped (`gauge` with a collect function). Names follow
 * OpenTelemetry's semantic conventions where one exists (`http_server_request_duration_seconds`,
 * `db_client_operation_duration_seconds`); the service's own start with `plant_store_`.
 */
export class Metrics {
  readonly registry = new Registry();

  readonly requestDuration = new Histogram({
    name: 'http_server_request_duration_seconds',
    help: 'Duration of HTTP requests, from the first byte read to the last byte written',
    labelNames: [
      'http_request_method',
      'http_route',
      'http_response_status_code',
    ] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly activeRequests = new Gauge({
    name: 'http_server_active_requests',
    help: 'HTTP requests being served',
    registers: [this.registry],
  });

  readonly rateLimitRejections = new Counter({
    name: 'plant_store_rate_limit_rejections_total',
    help: 'Requests and connections refused with 429, by the limit that refused them',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  readonly authenticationFailures = new Counter({
    name: 'plant_store_authentication_failures_total',
    help: 'Requests refused with 401 or 403, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  readonly webhookAttempts = new Counter({
    name: 'plant_store_webhook_attempts_total',
    help: 'Webhook delivery attempts, by result',
    labelNames: ['result'] as const,
    registers: [this.registry],
  });

  readonly webhookReceiverChanges = new Counter({
    name: 'plant_store_webhook_receiver_changes_total',
    help: "Changes of webhook receivers' states, by the state entered: failing, healthy, paused, probing, resumed",
    labelNames: ['to'] as const,
    registers: [this.registry],
  });

  readonly webhookDeliveries = new Counter({
    name: 'plant_store_webhook_deliveries_total',
    help: 'Webhook deliveries settled: delivered, or failed for good',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly jobRuns = new Counter({
    name: 'plant_store_job_runs_total',
    help: 'Runs of periodic jobs on this instance, by job and outcome: done, backlog (it left work for another run of its tick), failed',
    labelNames: ['job', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly jobRunDuration = new Histogram({
    name: 'plant_store_job_run_duration_seconds',
    help: 'Duration of runs of periodic jobs on this instance, by job',
    labelNames: ['job'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly eventHandlerRuns = new Counter({
    name: 'plant_store_event_handler_events_total',
    help: 'Events handled by in-process event handlers on this instance, by handler and outcome: handled, failed (tried again later), skipped (given up on after its attempts, kept for a retry)',
    labelNames: ['handler', 'outcome'] as const,
    registers: [this.registry],
  });

  readonly eventHandlerLag = new Gauge({
    name: 'plant_store_event_handler_lag_events',
    help: "Events in the log past each in-process event handler's cursor, as this instance last read them (0 while it keeps up)",
    labelNames: ['handler'] as const,
    registers: [this.registry],
  });

  readonly backups = new Counter({
    name: 'plant_store_backups_total',
    help: 'Scheduled backups this instance took, by outcome: done, failed',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly queryDuration = new Histogram({
    name: 'db_client_operation_duration_seconds',
    help: 'Duration of database statements',
    labelNames: ['db_system_name'] as const,
    buckets: DURATION_BUCKETS,
    registers: [this.registry],
  });

  readonly queryErrors = new Counter({
    name: 'plant_store_database_query_errors_total',
    help: 'Database statements that failed',
    labelNames: ['db_system_name'] as const,
    registers: [this.registry],
  });

  constructor(
    /** Whether anything reads these: when not, the request path records nothing. */
    readonly enabled: boolean,
  ) {
    if (enabled) collectDefaultMetrics({ register: this.registry });
  }

  /** A gauge whose value is read when Prometheus scrapes, as `collect` sets it. */
  gauge<L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    collect: CollectFunction<Gauge<L>>,
  ): Gauge<L> {
    return new Gauge({
      name,
      help,
      labelNames,
      collect,
      registers: [this.registry],
    });
  }

  /** The metrics in Prometheus's text format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }
}
