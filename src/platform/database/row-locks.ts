import { Transactional } from '@nestjs-cls/transactional';
import type { TransactionalAdapterTypeOrm } from '@nestjs-cls/transactional-adapter-typeorm';
import type {
  FindOptionsOrder,
  FindOptionsWhere,
  ObjectLiteral,
  Repository,
} from 'typeorm';
import {
  transactionIsolationOf,
  transactionRunnerOf,
} from './transaction-context';

/**
 * `@Transactional()` for a rule that locks the rows it changes with findForUpdate: READ
 * COMMITTED, where a transaction that wants a locked row waits its turn for it. Everything
 * else is `@Transactional()`'s: all or nothing, joined when nested, on both engines.
 */
export function LockingTransaction(): MethodDecorator {
  return Transactional<TransactionalAdapterTypeOrm>({
    isolationLevel: 'READ COMMITTED',
  });
}

/**
 * The rows of `repository` that `where` finds, locked until the caller's transaction ends:
 * the tool for a rule that reads rows, checks them and writes them back, on rows many
 * requests change at once (stock, a balance, a counter). Call it first, for every row the
 * rule will change, from a method marked `@LockingTransaction()` (docs/conventions.md,
 * "Business rules").
 *
 * - On PostgreSQL it is `SELECT ... ORDER BY <primary key> FOR UPDATE`: a transaction that
 *   wants a row another holds waits for it (up to DB_STATEMENT_TIMEOUT), then reads it as
 *   that one left it, so nobody works from a stale copy and nobody retries. The rows are
 *   locked in the order of their key, whoever asks, so two rules locking the same rows can
 *   never wait for each other (a deadlock).
 * - On SQLite a transaction holds the one connection alone: the rows are read, and already
 *   safe.
 * - Only at READ COMMITTED: at SERIALIZABLE (the default of `@Transactional()`) or REPEATABLE
 *   READ, PostgreSQL fails a transaction whose locked row another changed after it began, and
 *   the wait would be followed by a retry. It refuses there, on both engines, so that a rule
 *   tried on SQLite is right on PostgreSQL too.
 */
export async function findForUpdate<Entity extends ObjectLiteral>(
  repository: Repository<Entity>,
  where: FindOptionsWhere<Entity> | FindOptionsWhere<Entity>[],
): Promise<Entity[]> {
  const { manager, metadata } = repository;
  const dataSource = manager.connection;
  const rule = `findForUpdate(${metadata.name})`;
  if (!transactionRunnerOf(dataSource)) {
    throw new Error(
      `${rule} was called outside a transaction: call it from a method marked @LockingTransaction(), whose end releases the rows (docs/conventions.md, "Business rules")`,
    );
  }
  const isolation = transactionIsolationOf(dataSource);
  if (isolation !== 'READ COMMITTED' && isolation !== 'READ UNCOMMITTED') {
    throw new Error(
      `${rule} runs in a ${isolation} transaction: mark the method @LockingTransaction() (READ COMMITTED), and open no transaction of another level around it (a transaction that joins one runs at the level of the outermost); at ${isolation} PostgreSQL fails a transaction whose locked row another one changed, and it would be retried instead of waiting its turn (docs/conventions.md, "Business rules")`,
    );
  }
  const order = Object.fromEntries(
    metadata.primaryColumns.map((column) => [column.propertyPath, 'ASC']),
  ) as FindOptionsOrder<Entity>;
  return repository.find({
    where,
    order,
    ...(dataSource.options.type === 'postgres' && {
      lock: { mode: 'pessimistic_write' },
    }),
  });
}
