import type { AddressInfo } from 'node:net';
import { Logger } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { createApp, type CreateAppOptions } from './setup-app';
import {
  oidcConfig,
  type OidcSettings,
} from './platform/auth/oidc/oidc.config';
import { appConfig, type AppConfig } from './platform/config/app.config';
import {
  databaseConfig,
  describeDatabase,
} from './platform/config/database.config';
import {
  loadEnvironment,
  unknownSettingWarnings,
} from './platform/config/environment';
import { packageVersion } from './platform/config/package-version';
import { StartupError } from './platform/common/errors/startup-error';
import { ShutdownGateService } from './platform/http/shutdown-gate.service';
import { MetricsServer } from './platform/metrics/metrics-server';
import { tracing } from './platform/tracing/tracing';
import {
  describeTrustProxy,
  hidePassword,
} from './platform/logging/start-line';
import {
  flushLogs,
  logBootFailure,
  logProcessWarnings,
} from './platform/logging/pino-logger';

/** Why the listener could not open, in the words of PORT and HOST; undefined if unforeseen. */
function explainListenFailure(
  error: unknown,
  config: AppConfig,
): StartupError | undefined {
  const code = (error as { code?: unknown }).code;
  const where = `port ${config.port} on ${config.host}`;
  const explanation =
    code === 'EADDRINUSE'
      ? `${where} is in use by another process: stop it, or set PORT to a free port`
      : code === 'EACCES'
        ? `this user may not listen on ${where}: set PORT to 1024 or above`
        : code === 'EADDRNOTAVAIL'
          ? `HOST ${config.host} is not an address of this machine: set HOST to one (0.0.0.0 for all)`
          : undefined;
  return explanation === undefined
    ? undefined
    : new StartupError(explanation, { cause: error });
}

/** The address people type: localhost when listening on every interface. */
function localUrl(host: string, port: number): string {
  const name = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  return `http://${name.includes(':') ? `[${name}]` : name}:${port}`;
}

async function bootstrap(
  options: CreateAppOptions,
): Promise<NestExpressApplication> {
  loadEnvironment(process.env);
  // before the app, whose first connection may warn (node-postgres on sslmode)
  logProcessWarnings(new Logger('Node'));
  const app = await createApp(options);
  for (const warning of unknownSettingWarnings(process.env)) {
    new Logger('Configuration').warn(warning);
  }
  const config = app.get<AppConfig>(appConfig.KEY);
  try {
    await app.listen(config.port, config.host);
  } catch (error) {
    throw explainListenFailure(error, config) ?? error;
  }

  const { port } = app.getHttpServer().address() as AddressInfo;
  const url = localUrl(config.host, port);
  const database = describeDatabase(app.get(databaseConfig.KEY));
  const rateLimits = config.rateLimit.redisUrl
    ? `in Redis at ${hidePassword(config.rateLimit.redisUrl)}`
    : 'in memory';
  const proxies = describeTrustProxy(config.trustProxy);
  const metricsPort = app.get(MetricsServer).port();
  const metrics =
    metricsPort === undefined
      ? 'no metrics (METRICS_PORT unset)'
      : `metrics at ${localUrl(config.host, metricsPort)}/metrics`;
  const version = packageVersion();
  const identityProvider = app.get<OidcSettings>(oidcConfig.KEY).provider;
  const accessTokens = identityProvider
    ? `; access tokens of ${identityProvider.issuer} too`
    : '';
  new Logger('PlantStore').log(
    {
      url,
      docs: `${url}/docs`,
      ...(config.publicBaseUrl && { publicBaseUrl: config.publicBaseUrl }),
      database,
      rateLimits,
      trustProxy: proxies,
      metrics,
      version,
      node: process.version,
      ...(identityProvider && { identityProvider: identityProvider.issuer }),
    },
    `plant store ${version} listening at ${url}, docs at ${url}/docs, on ${database}; rate limits ${rateLimits}; ${proxies}; ${metrics}${accessTokens}`,
  );

  if (config.trustProxy === true || typeof config.trustProxy === 'number') {
    new Logger('PlantStore').warn(
      `TRUST_PROXY=${String(config.trustProxy)} believes X-Forwarded-For from any peer: a client can choose the address its rate limits and blocks count, and guess tokens without limit. Name the proxies instead (TRUST_PROXY=10.0.0.0/8, loopback), whose connections are then exempt from MAX_CONNECTIONS_PER_ADDRESS`,
    );
  }

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    app
      .get(ShutdownGateService)
      .close(app, {
        delayMs: config.shutdownDelayMs,
        graceMs: config.shutdownGracePeriodMs,
      })
      .then(
        // 0 when every in-flight request finished; 1 when some had to be cut
        (outcome) => {
          const uptime = Math.round(process.uptime());
          new Logger('PlantStore').log(
            { uptimeSeconds: uptime, outcome },
            `plant store stopped after ${uptime} s up: ${outcome === 'drained' ? 'every request in flight finished' : 'requests still in flight were cut'}`,
          );
          flushLogs();
          // the spans still buffered go out before the process does
          void (tracing.stop?.() ?? Promise.resolve())
            .catch(() => undefined)
            .then(() => process.exit(outcome === 'drained' ? 0 : 1));
        },
        (error: unknown) => {
          new Logger('Shutdown').error(error, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  return app;
}

/**
 * Runs the service as `node dist/main.js` does: validates the environment, creates the app,
 * listens, logs the start line and stops on SIGTERM or SIGINT. A boot that fails ends the
 * process in one line. `options.imports` adds modules beside AppModule: a fixture process of
 * the tests (test/fixtures/), run the same way as the service.
 */
export function serve(
  options: CreateAppOptions = {},
): Promise<NestExpressApplication> {
  return bootstrap(options).catch((error: unknown) => {
    // something to fix before it can start (a setting, the port, the database): its message
    // says what; anything else comes with its stack
    logBootFailure(error, error instanceof StartupError);
    process.exit(1);
  });
}
