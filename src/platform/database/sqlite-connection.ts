import type { Database, Statement } from 'better-sqlite3';
import { LRUCache } from 'lru-cache';
import {
  QueryFailedError,
  QueryResult,
  type DataSource,
  type QueryRunner,
} from 'typeorm';
import { ConnectionGate } from './connection-gate';
import {
  transactionRunnerOf,
  type IsolationLevel,
} from './transaction-context';

/**
 * How a transaction begins on SQLite: holding the write lock from its first statement. Within
 * one process the gate already runs transactions one at a time; another process on the same
 * file (a second instance during a rolling update, the command-line tool) is what this is for.
 * A deferred transaction that has read and then writes after another process committed fails
 * at once with SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out; an immediate one waits
 * its turn for the lock (better-sqlite3's 5 s) and then reads what is current.
 */
export const BEGIN_IMMEDIATE = 'BEGIN IMMEDIATE TRANSACTION';

/** Statements kept prepared on SQLite's connection, by text: every text the code writes. */
const PREPARED_STATEMENTS = 256;

/** SQLite's one connection, as every statement and transaction of the data source meets it. */
export interface SqliteConnection {
  /** Held by a transaction from BEGIN to its end; statements pass it between transactions. */
  gate: ConnectionGate;
  /** The one runner; its `query` passes the gate. */
  shared: QueryRunner;
  /** The shared runner's own `query`, run at once when `holds()`, through the gate otherwise. */
  gatedQuery: (holds: () => boolean) => QueryRunner['query'];
  /** A statement on its prepared statement, inside the statement wrappers. */
  preparedQuery: QueryRunner['query'];
}

/**
 * The one SQLite runner of `dataSource`, its statements through the gate from now on: they
 * run beside each other, never inside another request's transaction. The holder's own pass
 * at once. `observed` puts a statement inside the data source's statement wrappers.
 */
export function gateSqliteConnection(
  dataSource: DataSource,
  timeoutMs: number,
  observed: (run: QueryRunner['query']) => QueryRunner['query'],
): SqliteConnection {
  const gate = new ConnectionGate(timeoutMs);
  const shared = dataSource.driver.createQueryRunner('master');
  const run = observed(shared.query.bind(shared));
  const gatedQuery = (holds: () => boolean) =>
    ((sql: string, parameters?: unknown[], structured?: boolean) =>
      holds()
        ? run(sql, parameters, structured as true)
        : gate.statement(() =>
            run(sql, parameters, structured as true),
          )) as QueryRunner['query'];
  // on SQLite a transaction's joiners get its session, the gate's holder
  shared.query = gatedQuery(
    () => gate.busy && transactionRunnerOf(dataSource) === gate.holder,
  );
  return {
    gate,
    shared,
    gatedQuery,
    preparedQuery: observed(preparedStatements(dataSource)),
  };
}

/**
 * A runner of its own over SQLite's one connection: its own transaction state, and a
 * transaction that holds the gate from BEGIN to COMMIT or ROLLBACK.
 */
export function sqliteSession(
  dataSource: DataSource,
  { gate, shared, gatedQuery }: SqliteConnection,
): QueryRunner {
  const session = Object.create(shared) as QueryRunner;
  const connection = (
    dataSource.driver as unknown as {
      databaseConnection: { inTransaction: boolean };
    }
  ).databaseConnection;
  // SQLite rolls a transaction back by itself after SQLITE_FULL, SQLITE_IOERR or
  // SQLITE_NOMEM: its COMMIT fails, and so does the ROLLBACK after it, and TypeORM goes on
  // believing in the transaction. A session that did so held the gate for ever, and every
  // request after it waited without end (a full disk, issue 60): the connection says
  // whether a transaction is still open, and a session without one lets the gate go.
  const endOf =
    (end: 'commitTransaction' | 'rollbackTransaction') =>
    async (): Promise<void> => {
      try {
        await shared[end].call(session);
      } catch (error) {
        if (!session.isTransactionActive || connection.inTransaction) {
          throw error;
        }
        Object.assign(session, {
          isTransactionActive: false,
          transactionDepth: 0,
        });
        // nothing is left to roll back: the rollback is done
        if (end === 'commitTransaction') throw error;
      } finally {
        if (!session.isTransactionActive) gate.release(session);
      }
    };
  const query = gatedQuery(() => gate.holder === session);
  Object.assign(session, {
    isTransactionActive: false,
    transactionDepth: 0,
    query: ((sql: string, ...rest: unknown[]) =>
      (query as (...args: unknown[]) => Promise<unknown>)(
        sql === 'BEGIN TRANSACTION' ? BEGIN_IMMEDIATE : sql,
        ...rest,
      )) as QueryRunner['query'],
    startTransaction: async (isolation?: IsolationLevel) => {
      if (!session.isTransactionActive) await gate.acquire(session);
      try {
        await shared.startTransaction.call(session, isolation);
      } finally {
        if (!session.isTransactionActive) gate.release(session);
      }
    },
    commitTransaction: endOf('commitTransaction'),
    rollbackTransaction: endOf('rollbackTransaction'),
    // the connection stays open for everyone; a joiner's release gives nothing back
    release: () => Promise.resolve(),
  });
  Object.assign(session, { manager: dataSource.createEntityManager(session) });
  return session;
}

/**
 * Runs statements on SQLite's connection as TypeORM's better-sqlite3 runner does (booleans as
 * 0 and 1, rows or the count of changed rows, failures as QueryFailedError), on statements
 * prepared once per text, without its events and awaits. For use while no transaction holds
 * the connection (ConnectionGate): the statement is over before anything else can run.
 */
function preparedStatements(dataSource: DataSource): QueryRunner['query'] {
  const connection = (
    dataSource.driver as unknown as { databaseConnection: Database }
  ).databaseConnection;
  const statements = new LRUCache<string, Statement>({
    max: PREPARED_STATEMENTS,
  });
  return ((sql: string, parameters: unknown[] = []) => {
    const values = parameters.map((value) =>
      typeof value === 'boolean' ? Number(value) : value,
    );
    try {
      let statement = statements.get(sql);
      if (statement === undefined) {
        statement = connection.prepare(sql);
        statements.set(sql, statement);
      }
      const result = new QueryResult();
      if (statement.reader) {
        result.records = result.raw = statement.all(...values);
      } else {
        const { changes, lastInsertRowid } = statement.run(...values);
        result.affected = changes;
        result.raw = lastInsertRowid;
      }
      return Promise.resolve(result);
    } catch (error) {
      return Promise.reject(new QueryFailedError(sql, values, error as Error));
    }
  }) as QueryRunner['query'];
}
