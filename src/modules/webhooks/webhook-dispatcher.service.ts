import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { setMaxListeners } from 'node:events';
import { webhooksConfig, type WebhooksConfig } from './webhooks.config';
import {
  DatabaseAvailabilityService,
  DatabaseClockService,
  isDatabaseBusy,
  isDatabaseUnavailable,
  StoreFenceService,
} from '../../platform/database';
import { Metrics } from '../../platform/metrics';
import { traced } from '../../platform/tracing';
import { DeliveryEngine } from './delivery-engine';
import {
  type AttemptContext,
  type DispatchObserver,
  type ReceiverChange,
} from './engine-dependencies';
import { DispatchLoop } from './dispatch-loop';
import { SqlDeliveryStore } from './sql-delivery-store';
import { WebhookSender, type WebhookMessage } from './webhook-sender';

/**
 * Sends the webhooks of the event log: the delivery engine (delivery-engine.ts) over the
 * database (sql-delivery-store.ts), polled on the process's own timers, its receivers' changes
 * in the log and its attempts in the metrics. At least once: an attempt cut short by shutdown
 * or a crash leaves its delivery pending, to be sent again.
 */
@Injectable()
export class WebhookDispatcher
  implements OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly logger = new Logger(WebhookDispatcher.name);
  private readonly shutdown = new AbortController();
  private readonly engine: DeliveryEngine;
  private readonly loop: DispatchLoop;

  constructor(
    store: SqlDeliveryStore,
    private readonly sender: WebhookSender,
    private readonly database: DatabaseAvailabilityService,
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
    private readonly metrics: Metrics,
    clock: DatabaseClockService,
    fence: StoreFenceService,
  ) {
    const fenced = () => !fence.writable;
    this.engine = new DeliveryEngine({
      store,
      send: (message, signal, attempt) => this.send(message, signal, attempt),
      now: () => clock.now(),
      config,
      observer: this.observer(),
      signal: this.shutdown.signal,
      fenced,
    });
    this.loop = new DispatchLoop(this.engine, config, {
      timers: {
        set: (run, ms) => setTimeout(run, ms),
        clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
      },
      intervalMs: config.pollIntervalMs,
      onPolled: () => this.database.cameBack(),
      onError: (error) => this.pollFailed(error),
      fenced,
    });
  }

  onApplicationBootstrap(): void {
    // every attempt in flight listens for shutdown on this one signal
    setMaxListeners(this.config.maxInFlight + 1, this.shutdown.signal);
    this.loop.start();
  }

  async beforeApplicationShutdown(): Promise<void> {
    const pollEnded = this.loop.stop();
    this.shutdown.abort();
    // a poll already running could otherwise still make deliveries after this returns
    await pollEnded;
    await this.engine.drained();
  }

  /** With tracing on, the attempt's span is the parent of the request the receiver gets. */
  private send(
    message: WebhookMessage,
    signal: AbortSignal,
    attempt: AttemptContext,
  ) {
    return traced(
      'webhook attempt',
      {
        'webhook.id': message.id,
        'webhook.event_type': message.type,
        'webhook.subscription_id': attempt.subscriptionId,
        'webhook.attempt': attempt.number,
      },
      async (span) => {
        const outcome = await this.sender.send(message, signal);
        span?.setAttribute('webhook.result', outcome.result);
        return outcome;
      },
    );
  }

  private pollFailed(error: unknown): void {
    if (this.shutdown.signal.aborted) return;
    if (isDatabaseUnavailable(error)) {
      this.database.wentAway(error);
    } else if (isDatabaseBusy(error)) {
      // the requests' turn: what is due stays due for the next poll
      this.logger.debug(`webhook poll deferred: ${(error as Error).message}`);
    } else {
      this.logger.error(
        error,
        'the webhook poll failed; trying again at the next',
      );
    }
  }

  /** One line per change of a receiver's state, and each attempt and delivery counted. */
  private observer(): DispatchObserver {
    const { logger, metrics } = this;
    return {
      receiverChanged: (change) => {
        metrics.webhookReceiverChanges.inc({ to: change.to });
        const line = describeChange(change);
        if (change.to === 'paused' || change.to === 'resumed')
          logger.warn(line);
        else logger.log(line);
      },
      attempted: (delivery, outcome, retryAt) => {
        metrics.webhookAttempts.inc({ result: outcome.result });
        if (outcome.delivered) return;
        const attempt = delivery.attempts + 1;
        const line =
          `webhook delivery ${delivery.id} attempt ${attempt} failed: ${outcome.error}` +
          (retryAt ? `; next try at ${retryAt.toISOString()}` : '; giving up');
        if (retryAt) logger.debug(line);
        else logger.warn(line);
      },
      settled: (outcome) => metrics.webhookDeliveries.inc({ outcome }),
      attemptFailed: (delivery, error) => {
        if (isDatabaseUnavailable(error)) {
          this.database.wentAway(error);
        } else if (isDatabaseBusy(error)) {
          logger.warn(
            `webhook delivery ${delivery.id}: the database was too busy to record the attempt (${(error as Error).message}); it will be attempted again`,
          );
        } else {
          logger.error(error, `webhook delivery ${delivery.id} failed`);
        }
      },
    };
  }
}

/** A receiver's change in the words of the log. */
export function describeChange(change: ReceiverChange): string {
  const subscription = `webhook subscription ${change.subscriptionId}`;
  switch (change.to) {
    case 'failing':
      return `${subscription} is failing: its receiver failed an attempt (${change.error})`;
    case 'healthy':
      return `${subscription} is healthy again: its receiver answered`;
    case 'paused': {
      const seconds = Math.round(
        (change.until.getTime() - change.from.getTime()) / 1000,
      );
      return change.failedProbes === 0
        ? `${subscription} paused for ${seconds} s, until ${change.until.toISOString()}: its receiver failed too many attempts in a row (last: ${change.error}); then one attempt probes it`
        : `${subscription} paused for ${seconds} s, until ${change.until.toISOString()}: probe ${change.failedProbes} of its receiver failed (${change.error})`;
    }
    case 'probing':
      return `${subscription} is probed: its pause is over, and delivery ${change.deliveryId} tries its receiver`;
    case 'resumed':
      return `${subscription} resumed: its receiver answered the probe, and every delivery goes again`;
  }
}
