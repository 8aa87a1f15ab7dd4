import { createApp } from './setup-app';
import { appConfig, type AppConfig } from './config/app.config';
import { validateEnvironment } from './config/environment';
import { ConfigError } from './config/read-env';
import { ShutdownGate } from './common/http/shutdown-gate';
import { UndeclaredAccessError } from './auth/route-access.check';
import {
  logBootFailure,
  logProcessWarnings,
} from './common/logging/pino-logger';
import { Logger } from '@nestjs/common';

async function bootstrap(): Promise<void> {
  validateEnvironment(process.env);
  const app = await createApp();
  logProcessWarnings(new Logger('Node'));
  const config = app.get<AppConfig>(appConfig.KEY);
  await app.listen(config.port, config.host);

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    app
      .get(ShutdownGate)
      .close(app, {
        delayMs: config.shutdownDelayMs,
        graceMs: config.shutdownGracePeriodMs,
      })
      .then(
        // 0 when every in-flight request finished; 1 when some had to be cut
        (outcome) => process.exit(outcome === 'drained' ? 0 : 1),
        (error: unknown) => {
          new Logger('Shutdown').error(error, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

bootstrap().catch((error: unknown) => {
  // a bad setting or a route without an access rule: the message says what to fix
  logBootFailure(
    error,
    error instanceof ConfigError || error instanceof UndeclaredAccessError,
  );
  process.exit(1);
});
