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

/**
 * `GET /metrics` for Prometheus, on METRICS_PORT: a listener of its own, never on the API's
 * port, so that neither the public nor the rate limits meet it. Off unless METRICS_PORT is set.
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
    const server = createServer((request, response) => {
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
    });
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
