import { AsyncLocalStorage } from 'node:async_hooks';
import type { DataSource, EntityManager, QueryRunner } from 'typeorm';

/** TypeORM's isolation levels (the package root does not export their type). */
export type IsolationLevel = NonNullable<
  Parameters<QueryRunner['startTransaction']>[0]
>;

/** What a transaction runs: its statements go through `manager`. */
export type Work<T> = (manager: EntityManager) => Promise<T>;

/** The transaction an async context runs in, and the runner that joins it. */
export interface ActiveTransaction {
  dataSource: DataSource;
  /** The transaction's runner for code that joins: releasing it gives nothing back. */
  joined: QueryRunner;
  /** When its attempts must have had their connection, in ms (Date.now()). */
  deadline: number;
  /** What it was asked to run at; PostgreSQL's level, and on SQLite what the rule expects. */
  isolation: IsolationLevel;
  /**
   * It takes the level of the first transaction that joins it, while no statement has run in
   * it (`adoptingTransaction`); `statementRan` says whether one has.
   */
  adopting?: {
    statementRan: boolean;
    setLevel: (level: IsolationLevel) => Promise<void>;
  };
  /** The UPDATE it ends with, if it was given one (`closeWith`). */
  closing?: ClosingUpdate;
}

/** An UPDATE that a transaction commits only if it changes a row. */
export interface ClosingUpdate {
  sql: string;
  parameters: unknown[];
}

/**
 * A transaction's closing UPDATE (`closeWith`) changed no row: the transaction was rolled back,
 * nothing of it applied.
 */
export class ClosingUpdateChangedNothing extends Error {
  override readonly name = 'ClosingUpdateChangedNothing';

  constructor() {
    super(
      "the transaction's closing UPDATE changed no row, so the transaction was rolled back",
    );
  }
}

export const activeTransaction = new AsyncLocalStorage<ActiveTransaction>();

/**
 * The runner of the transaction the caller runs in on this data source, if any: what every
 * statement of the caller must use to take part in it (EntitySql asks; TypeORM's own calls go
 * through `createQueryRunner`, which answers the same).
 */
export function transactionRunnerOf(
  dataSource: DataSource,
): QueryRunner | undefined {
  const active = activeTransaction.getStore();
  if (active === undefined) return undefined;
  if (active.dataSource !== dataSource) throw new TransactionOfAnotherApp();
  return active.joined;
}

/**
 * Ends the transaction the caller runs in on `dataSource` with `update`, once its work is done:
 * it commits only if the UPDATE changes a row, and otherwise rolls back and fails with
 * ClosingUpdateChangedNothing. For a write that decides whether everything before it counts,
 * such as an answer stored under a lease that may have been taken over. On PostgreSQL the
 * UPDATE goes out with COMMIT, the two in one round trip (TransactionRunner).
 */
export function closeWith(dataSource: DataSource, update: ClosingUpdate): void {
  const active = activeTransaction.getStore();
  if (active === undefined || active.dataSource !== dataSource) {
    throw new Error(
      'closeWith is for the statements of a transaction, and none runs here',
    );
  }
  if (active.closing !== undefined) {
    throw new Error(
      'a transaction closes with one UPDATE, and this one has one already',
    );
  }
  active.closing = update;
}

/**
 * A statement of one app inside a transaction another app of the same process opened: the
 * two apps share @nestjs-cls/transactional's TransactionHost, one per process, so every
 * app's `@Transactional()` methods open their transactions on the data source of the app
 * started last, and their statements would run outside them, on their own.
 */
export class TransactionOfAnotherApp extends Error {
  override readonly name = 'TransactionOfAnotherApp';

  constructor() {
    super(
      'a statement ran inside a transaction that another Nest app of this process opened: @nestjs-cls/transactional keeps one TransactionHost per process, so the @Transactional() methods of every app run on the database of the app created last. Run one app per process at a time: close the first app before creating the next, or start the second as a process of its own (startServiceProcess in test/helpers/service-process.ts)',
    );
  }
}

/**
 * The isolation level the transaction the caller runs in on this data source was asked for
 * (SERIALIZABLE unless said), whichever the engine; undefined outside one. On SQLite every
 * transaction holds the one connection alone, whatever it asked for.
 */
export function transactionIsolationOf(
  dataSource: DataSource,
): IsolationLevel | undefined {
  const active = activeTransaction.getStore();
  return active?.dataSource === dataSource ? active.isolation : undefined;
}
