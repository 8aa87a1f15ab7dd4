import { Inject, Injectable } from '@nestjs/common';
import { request as httpRequest, type RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { webhooksConfig, type WebhooksConfig } from './webhooks.config';
import { describeUrlProblem, publicOnlyLookup } from './outbound-target';
import type { AttemptResult } from '../../platform/metrics';
import { signWebhook } from './webhook-signature';

/** A receiver's answer is read this far at most; only its status matters. */
const RESPONSE_BYTES_READ = 4096;

export interface WebhookMessage {
  url: string;
  secret: string;
  id: string;
  /** The event type, such as `plant.added`, sent as `webhook-event-type`. */
  type: string;
  body: string;
}

/**
 * Names the event of a delivery: bodies do not (plant.added keeps the upstream document's bare
 * NewPlant). Standard Webhooks signs id, timestamp and body only; see docs/decisions.md,
 * "Webhooks", for why an unsigned type header is safe for receivers that drop repeated ids.
 */
export const EVENT_TYPE_HEADER = 'webhook-event-type';

export interface AttemptOutcome {
  delivered: boolean;
  /** How it ended, as `plant_store_webhook_attempts_total` counts it. */
  result: AttemptResult;
  statusCode?: number;
  /** Why the attempt failed, in a few words, for `webhooks deliveries`. */
  error?: string;
  /**
   * The address policy refused the target: no later attempt can fare better, so the delivery
   * fails now rather than retrying for a day.
   */
  refused?: boolean;
  /**
   * The attempt never reached the receiver: this process stopped (its timeout fired more than
   * STALL_MS late, before the request was written), or is shutting down. It is no attempt,
   * and is not counted.
   */
  abandoned?: boolean;
  /**
   * Milliseconds from when the request was written to the receiver's answer: its own time,
   * without the service's queueing or the connection's setup.
   */
  answerMs?: number;
}

/** A timeout that fires this much later than due means the process itself was stopped. */
export const STALL_MS = 1000;

/** Sends one Standard Webhooks request: no redirects followed, bounded in time and in reading. */
@Injectable()
export class WebhookSender {
  constructor(
    @Inject(webhooksConfig.KEY) private readonly config: WebhooksConfig,
  ) {}

  send(message: WebhookMessage, signal?: AbortSignal): Promise<AttemptOutcome> {
    const problem = describeUrlProblem(
      message.url,
      this.config.allowPrivateNetworks,
    );
    if (problem) {
      return Promise.resolve({
        delivered: false,
        result: 'refused',
        error: problem,
        refused: true,
      });
    }

    const timestamp = Math.floor(Date.now() / 1000);
    const url = new URL(message.url);
    const options: RequestOptions = {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'Content-Length': Buffer.byteLength(message.body),
        'User-Agent': 'plant-store-webhooks/1.0',
        'webhook-id': message.id,
        [EVENT_TYPE_HEADER]: message.type,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': signWebhook(
          message.secret,
          message.id,
          timestamp,
          message.body,
        ),
      },
      signal,
      lookup: this.config.allowPrivateNetworks ? undefined : publicOnlyLookup,
    };
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;

    return new Promise((resolve) => {
      const started = performance.now();
      // when the request was written to the socket: the receiver may have it, whatever follows
      let writtenAt: number | undefined;
      let settled = false;
      const finish = (outcome: AttemptOutcome) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        request.destroy();
        resolve(outcome);
      };
      const request = send(url, options, (response) => {
        const statusCode = response.statusCode ?? 0;
        const answerMs = Math.round(performance.now() - (writtenAt ?? started));
        let read = 0;
        response.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read >= RESPONSE_BYTES_READ) response.destroy();
        });
        const settle = () =>
          finish(
            statusCode >= 200 && statusCode < 300
              ? { delivered: true, result: 'success', statusCode, answerMs }
              : {
                  delivered: false,
                  result: 'http_error',
                  statusCode,
                  error: `the receiver answered ${statusCode}`,
                  answerMs,
                },
          );
        response.on('end', settle);
        response.on('close', settle);
        response.on('error', settle);
      });
      const timer = setTimeout(
        () =>
          finish({
            delivered: false,
            result: 'timeout',
            error: `no answer within ${this.config.timeoutMs} ms`,
            abandoned:
              writtenAt === undefined &&
              performance.now() - started > this.config.timeoutMs + STALL_MS,
          }),
        this.config.timeoutMs,
      );
      request.on('finish', () => {
        writtenAt = performance.now();
      });
      request.on('error', (error: NodeJS.ErrnoException) =>
        finish({
          delivered: false,
          error: describeRequestError(error),
          ...(error.code === 'ENOTPUBLIC'
            ? { result: 'refused', refused: true }
            : { result: 'network_error' }),
          abandoned: error.code === 'ABORT_ERR' && writtenAt === undefined,
        }),
      );
      request.end(message.body);
    });
  }
}

function describeRequestError(error: NodeJS.ErrnoException): string {
  switch (error.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
      return 'the host name does not resolve';
    case 'ENOTPUBLIC':
      return error.message;
    case 'ABORT_ERR':
      return 'aborted';
    default:
      return error.code ? `request failed (${error.code})` : 'request failed';
  }
}
