import type { CallbackPool } from './connection-queue';

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

/**
 * PostgreSQL parses and plans an unnamed statement every time it runs; a named one (pg's
 * `name`) once per connection, then only binds and executes it. Every statement with
 * parameters runs with a name of its text's, for the first MAX_NAMED_STATEMENTS texts: the
 * service's statements are a fixed set (EntitySql's and TypeORM's query builder's), and the
 * cap keeps a text that varies (an IN list, say) from filling each connection's memory. A
 * statement without parameters (BEGIN, SET, a migration's DDL) is left unnamed: it may hold
 * several statements, which a prepared one cannot.
 */
export class NamedStatements {
  private readonly names = new Map<string, string>();
  private readonly clients = new WeakSet<PgClient>();

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
      return name === undefined
        ? query(config, values, callback)
        : query({ name, text: config, values }, callback);
    };
  }

  private nameOf(text: string): string | undefined {
    let name = this.names.get(text);
    if (name === undefined && this.names.size < this.max) {
      name = `plant_store_${this.names.size + 1}`;
      this.names.set(text, name);
    }
    return name;
  }
}
