import { hostname } from 'node:os';
import {
  Global,
  Logger,
  Module,
  type DynamicModule,
  type ModuleMetadata,
} from '@nestjs/common';
import { APP_GUARD, APP_INTERCEPTOR } from '@nestjs/core';
import { getDataSourceToken, TypeOrmModule } from '@nestjs/typeorm';
import { ClsPluginTransactional } from '@nestjs-cls/transactional';
import { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import { ClsModule } from 'nestjs-cls';
import { databaseConfig, type DatabaseConfig } from '../config/database.config';
import {
  createDataSourceOptions,
  ensureDatabaseFolder,
} from './data-source-options';
import { DatabaseAvailabilityService } from './database-availability.service';
import { DatabaseClockService } from './database-clock.service';
import { AutovacuumCheckService } from './autovacuum-check.service';
import { DatabaseMetricsService } from './database-metrics.service';
import { SchemaCompatibilityService } from './schema-compatibility.service';
import { StoreFenceService } from './store-fence.service';
import { StoreMove } from './store-move.entity';
import { type MigrationReporter } from './locked-migrations';
import { PortableDataSource } from './portable-data-source';

/**
 * ClsModule registers a global guard and a global interceptor even when, as here, it mounts
 * neither: they do nothing, yet every request pays for them (bench/README.md, "Issue 21:
 * transactions on both engines"). Transactions need only ClsService and the plugin's providers.
 */
function withoutRequestEnhancers(module: DynamicModule): DynamicModule {
  const isEnhancer = (provider: unknown) =>
    typeof provider === 'object' &&
    provider !== null &&
    'provide' in provider &&
    (provider.provide === APP_GUARD || provider.provide === APP_INTERCEPTOR);
  const imports: ModuleMetadata['imports'] = module.imports?.map((imported) =>
    typeof imported === 'object' && 'module' in imported
      ? withoutRequestEnhancers(imported)
      : imported,
  );
  return {
    ...module,
    providers: module.providers?.filter((provider) => !isEnhancer(provider)),
    imports,
  };
}

/**
 * One line per migration this instance applied: which, where and how long, so that a slow
 * start reads as the migration it was (docs/operations.md, "Upgrades").
 */
function migrationLog(logger: Logger): MigrationReporter {
  const instance = `${hostname()}:${process.pid}`;
  return {
    applied: (migration, durationMs) =>
      logger.log(
        { migration, instance, durationMs },
        `migration ${migration} applied by ${instance} in ${durationMs} ms`,
      ),
    retrying: (attempt, reason, delayMs) =>
      logger.warn(
        { attempt, instance, reason, delayMs },
        `migrations rolled back after waiting for live traffic's locks (${reason}): trying again in ${delayMs} ms`,
      ),
  };
}

/**
 * The one DataSource; each feature module brings its entities with TypeOrmModule.forFeature.
 * Global for DatabaseAvailabilityService, which the exception filter and readiness share.
 *
 * Business rules run in transactions through @nestjs-cls/transactional: `@Transactional()` on
 * a service method, `TransactionHost` for its EntityManager. Its TypeORM adapter opens them
 * with `DataSource.transaction`, which PortableDataSource makes safe on both engines.
 */
@Global()
@Module({
  providers: [
    DatabaseAvailabilityService,
    DatabaseClockService,
    DatabaseMetricsService,
    SchemaCompatibilityService,
    AutovacuumCheckService,
    StoreFenceService,
  ],
  exports: [
    DatabaseAvailabilityService,
    DatabaseClockService,
    SchemaCompatibilityService,
    StoreFenceService,
  ],
  imports: [
    TypeOrmModule.forRootAsync({
      inject: [databaseConfig.KEY],
      useFactory: (config: DatabaseConfig) => {
        const logger = new Logger('Database');
        ensureDatabaseFolder(config).forEach((note) => logger.warn(note));
        return {
          ...createDataSourceOptions(config),
          migrationReporter: migrationLog(new Logger('Migrations')),
          // TypeORM's own console lines (a migration's failure, always on) would not be JSON:
          // the reporter and the boot failure say the same; DEBUG=typeorm:* shows them
          logger: 'debug' as const,
          autoLoadEntities: true,
          // no retry: a database that cannot be reached at start ends the start, in one line
          retryAttempts: 0,
          toRetry: () => false,
        };
      },
      dataSourceFactory: (options) =>
        Promise.resolve(new PortableDataSource(options!)),
    }),
    TypeOrmModule.forFeature([StoreMove]),
    withoutRequestEnhancers(
      ClsModule.forRoot({
        global: true,
        plugins: [
          new ClsPluginTransactional({
            adapter: new TransactionalAdapterTypeOrm({
              dataSourceToken: getDataSourceToken(),
            }),
          }),
        ],
      }),
    ),
  ],
})
export class DatabaseModule {}
