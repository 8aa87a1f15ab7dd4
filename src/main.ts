import { createApp } from './setup-app';
import { appConfig, type AppConfig } from './config/app.config';
import { validateEnvironment } from './config/environment';
import { ConfigError } from './config/read-env';

async function bootstrap(): Promise<void> {
  validateEnvironment(process.env);
  const app = await createApp();
  const { port, host } = app.get<AppConfig>(appConfig.KEY);
  await app.listen(port, host);

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    // close() stops accepting, lets in-flight requests finish, then closes the database
    app.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

bootstrap().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
