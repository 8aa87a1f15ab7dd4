import { Injectable, Optional, type OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Metrics } from '../metrics/metrics';
import { PortableDataSource } from './portable-data-source';
import { databaseSystemOf } from './statement-observers';

interface PgPool {
  totalCount: number;
  idleCount: number;
}

/**
 * The database as Prometheus sees it: how long statements take and how many fail, and on
 * PostgreSQL how the pool is used. Only where the app has metrics on (the CLI has none).
 */
@Injectable()
export class DatabaseMetricsService implements OnModuleInit {
  constructor(
    private readonly dataSource: DataSource,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  onModuleInit(): void {
    const { metrics, dataSource } = this;
    if (!metrics?.enabled || !(dataSource instanceof PortableDataSource)) {
      return;
    }
    const system = databaseSystemOf(dataSource);
    const labels = { db_system_name: system };
    dataSource.statementWrappers.push(async (_sql, run) => {
      const started = performance.now();
      try {
        return await run();
      } catch (error) {
        metrics.queryErrors.inc(labels);
        throw error;
      } finally {
        metrics.queryDuration.observe(
          labels,
          (performance.now() - started) / 1000,
        );
      }
    });
    metrics.gauge(
      'db_client_connection_pending_requests',
      'Work waiting its turn for a database connection: a pooled one on PostgreSQL (at most DB_QUEUE_LIMIT), the one connection on SQLite',
      [],
      function () {
        this.set(dataSource.waiting);
      },
    );
    if (system !== 'postgresql') return;
    const pool = (dataSource.driver as unknown as { master: PgPool }).master;
    metrics.gauge(
      'db_client_connections',
      'PostgreSQL connections of the pool, by state',
      ['state'],
      function () {
        this.set({ state: 'used' }, pool.totalCount - pool.idleCount);
        this.set({ state: 'idle' }, pool.idleCount);
      },
    );
  }
}
