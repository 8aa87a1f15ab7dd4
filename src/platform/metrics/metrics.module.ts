import { Global, Module } from '@nestjs/common';
import { appConfig, type AppConfig } from '../config/app.config';
import { Metrics } from './metrics';
import { MetricsServer } from './metrics-server';

/** The one Metrics of the app, for every module to count in, and the server that shows them. */
@Global()
@Module({
  providers: [
    {
      provide: Metrics,
      useFactory: (config: AppConfig) =>
        new Metrics(config.metricsPort !== undefined),
      inject: [appConfig.KEY],
    },
    MetricsServer,
  ],
  exports: [Metrics, MetricsServer],
})
export class MetricsModule {}
