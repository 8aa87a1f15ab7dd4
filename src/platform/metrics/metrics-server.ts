import {
  Inject,
  Injectable,
  type OnApplicationBootstrap,
  type OnApplicationShutdown,
} from '@nestjs/common';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StartupError } from '../common/errors/startup-error';
import { appConfig, type AppConfig } from '../config/app.config';
import { Metrics } from './metrics';

/** Connections the metrics port holds at once: a few scrapers, and no flood of idle ones. */
export const METRICS_MAX_CONNECTIONS = 32;

/** A scrape's request must arrive, and an idle connection goes, within this. */
export const METRICS_TIMEOUT_MS = 5000;

/**
 * `GET /metrics` for Prometheus, on METRICS_PORT: a listener of its own, never on the API's
 * port, so that neither the public nor the rate limits meet it. Off unless METRICS_PORT is set.
 * It needs no token and may listen on every interface, so it is bounded like the API: at most
 * METRICS_MAX_CONNECTIONS connections, each with METRICS_TIMEOUT_MS to send its request and as
 * long idle. A scrape always answers: values read from the database that cannot be read are
 * the last ones, with their age (webhook-metrics.service.ts).
 */
@Injectable()
export class MetricsServer
  implements OnApplicationBootstrap, OnApplicationShutdown
{
  private server?: Server;

  constructor(
    private readonly metrics: Metrics,
    @Inject(appConfig.KEY) private readonly config: AppConfig,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const { metricsPort: port, host } = this.config;
    if (port === undefined) return;
    const server = createServer(
      {
        headersTimeout: METRICS_TIMEOUT_MS,
        requestTimeout: METRICS_TIMEOUT_MS,
        keepAliveTimeout: METRICS_TIMEOUT_MS,
        // how often the timeouts above are checked: Node's default is every 30 s
        connectionsCheckingInterval: METRICS_TIMEOUT_MS / 5,
      },
      (request, response) => {
        if (
          request.method !== 'GET' ||
          request.url?.split('?')[0] !== '/metrics'
        ) {
          response.writeHead(404, { 'Content-Type': 'text/plain' });
          response.end('the metrics are at GET /metrics\n');
          return;
        }
        this.metrics.text().then(
          (text) => {
            response.writeHead(200, {
              'Content-Type': this.metrics.registry.contentType,
            });
            response.end(text);
          },
          (error: unknown) => {
            response.writeHead(500, { 'Content-Type': 'text/plain' });
            response.end(
              `the metrics could not be collected: ${String(error)}\n`,
            );
          },
        );
      },
    );
    server.maxConnections = METRICS_MAX_CONNECTIONS;
    // a connection that sends nothing is closed by whichever comes first: Node's check of the
    // timeouts above (which answers 408 first) or this idle timeout (which closes it bare)
    server.timeout = METRICS_TIMEOUT_MS;
    await new Promise<void>((resolve, reject) => {
      server.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          error.code === 'EADDRINUSE'
            ? new StartupError(
                `METRICS_PORT ${port} on ${host} is in use by another process: stop it, or set METRICS_PORT to a free port`,
                { cause: error },
              )
            : error,
        ),
      );
      server.listen(port, host, resolve);
    });
    this.server = server;
  }

  /** Where it listens, once it does: the port METRICS_PORT names, or the one 0 was given. */
  port(): number | undefined {
    return (this.server?.address() as AddressInfo | null)?.port;
  }

  async onApplicationShutdown(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}
