import type { DataSource } from 'typeorm';
import type { CallbackPool } from './callback-pool';
import {
  ConnectionQueue,
  queueConnections,
  type QueueBounds,
} from './connection-queue';
import { NamedStatements } from './named-statements';
import { activeTransaction } from './transaction-context';

/** pg-pool's Pool as the driver holds it (`driver.master`), and what it was made with. */
export interface PgPool extends CallbackPool {
  options: Record<string, unknown>;
  query(sql: string): Promise<unknown>;
  end(): Promise<void>;
}

/** The pg module TypeORM's driver loaded (`driver.postgres`). */
interface PgModule {
  Pool: new (options: Record<string, unknown>) => PgPool;
}

function poolOf(dataSource: DataSource): PgPool {
  return (dataSource.driver as unknown as { master: PgPool }).master;
}

/**
 * Every connection the pool of `dataSource` gives out waits its turn in a bounded line first
 * (the one returned), and runs its statements with parameters as named ones
 * (named-statements.ts) unless `namedStatements` is false. A transaction's wait ends at its
 * deadline.
 */
export function queuePooledConnections(
  dataSource: DataSource,
  bounds: QueueBounds,
  namedStatements: boolean,
): ConnectionQueue {
  const pool = poolOf(dataSource);
  if (namedStatements) new NamedStatements().nameStatementsOfPool(pool);
  const queue = new ConnectionQueue(Number(pool.options.max), bounds);
  queueConnections(pool, queue, () => {
    const active = activeTransaction.getStore();
    return active?.dataSource === dataSource ? active.deadline : undefined;
  });
  return queue;
}

/**
 * A pool of one connection, made as the driver's pool of `dataSource` is (its URL, TLS and
 * timeouts), apart from it and its line.
 */
export function poolOfOne(dataSource: DataSource): PgPool {
  const { Pool } = (dataSource.driver as unknown as { postgres: PgModule })
    .postgres;
  const pool = new Pool({ ...poolOf(dataSource).options, max: 1 });
  // a failure is the caller's to see, in its query; an idle connection that dies is replaced
  (pool as unknown as NodeJS.EventEmitter).on('error', () => undefined);
  return pool;
}
