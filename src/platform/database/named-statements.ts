import type { CallbackPool } from './callback-pool';

/** The most statement texts a data source names; the rest run unnamed, as before. */
export const MAX_NAMED_STATEMENTS = 500;

/** A pg client's `query`, in the two forms TypeORM's runner and pg's pool call it. */
type PgQuery = (
  config: unknown,
  values?: unknown,
  callback?: unknown,
) => unknown;

interface PgClient {
  query: PgQuery;
}

/** A pg error's SQLSTATE, if it is one. */
const codeOf = (error: unknown): unknown =>
  (error as { code?: unknown } | null)?.code;

/**
 * PostgreSQL refuses to run a prepared statement whose result's columns changed since it was
 * prepared (a column added to the table of a `SELECT *`, a column's type changed): a schema
 * change by a newer release's migration, on a connection that prepared it before.
 */
export function isStalePlan(error: unknown): boolean {
  return (
    codeOf(error) === '0A000' &&
    /cached plan must not change result type/.test(
      (error as { message?: string }).message ?? '',
    )
  );
}

/**
 * PostgreSQL parses and plans an unnamed statement every time it runs; a named one (pg's
 * `name`) once per connection, then only binds and executes it. Every statement with
 * parameters runs with a name of its text's, for the first MAX_NAMED_STATEMENTS texts: the
 * service's statements are a fixed set (EntitySql's and TypeORM's query builder's), and the
 * cap keeps a text that varies (an IN list, say) from filling each connection's memory. A
 * statement without parameters (BEGIN, SET, a migration's DDL) is left unnamed: it may hold
 * several statements, which a prepared one cannot.
 *
 * A statement whose plan a schema change made stale (isStalePlan) gets a new name, on every
 * connection, and runs again under it at once: prepared anew, against the schema as it is
 * now. Inside a transaction the failure has aborted it, so the first error stands, and the
 * transaction is run again (isTransactionConflict) under the new name.
 */
export class NamedStatements {
  private readonly names = new Map<string, string>();
  private readonly clients = new WeakSet<PgClient>();
  private issued = 0;

  constructor(private readonly max = MAX_NAMED_STATEMENTS) {}

  /** Every connection `pool` hands out, the ones it opened already included. */
  nameStatementsOfPool(pool: CallbackPool): void {
    const connect = pool.connect.bind(pool);
    pool.connect = (callback) =>
      connect((error, client, release) => {
        if (!error) this.nameStatementsOf(client as PgClient);
        callback(error, client, release);
      });
  }

  /** Makes `client.query(text, values)` run `text` as a named statement where it may. */
  nameStatementsOf(client: PgClient): void {
    if (this.clients.has(client)) return;
    this.clients.add(client);
    const query = client.query.bind(client);
    client.query = (config, values, callback) => {
      const name =
        typeof config === 'string' && Array.isArray(values) && values.length > 0
          ? this.nameOf(config)
          : undefined;
      if (name === undefined) return query(config, values, callback);
      const text = config as string;
      const again = () => ({ name: this.renamed(text, name), text, values });
      if (typeof callback === 'function') {
        const answer = callback as (error: unknown, result?: unknown) => void;
        return query(
          { name, text, values },
          (error: unknown, result: unknown) => {
            if (!isStalePlan(error)) return answer(error, result);
            query(again(), (retryError: unknown, retried: unknown) =>
              answer(firstOf(error, retryError), retried),
            );
          },
        );
      }
      const result = query({ name, text, values });
      return result instanceof Promise
        ? result.catch((error: unknown) => {
            if (!isStalePlan(error)) throw error;
            return (query(again()) as Promise<unknown>).catch(
              (retryError: unknown) => {
                throw firstOf(error, retryError);
              },
            );
          })
        : result;
    };
  }

  private nameOf(text: string): string | undefined {
    let name = this.names.get(text);
    if (name === undefined && this.names.size < this.max) {
      name = this.issue();
      this.names.set(text, name);
    }
    return name;
  }

  /** The text's name after `stale` failed: a new one, once however many connections failed. */
  private renamed(text: string, stale: string): string {
    if (this.names.get(text) === stale) this.names.set(text, this.issue());
    return this.names.get(text)!;
  }

  private issue(): string {
    this.issued += 1;
    return `plant_store_${this.issued}`;
  }
}

/**
 * The error a statement run again after a stale plan ends with: the first one when the retry
 * met the transaction the first one aborted (25P02), the retry's own otherwise.
 */
function firstOf(first: unknown, retry: unknown): unknown {
  return codeOf(retry) === '25P02' ? first : retry;
}
