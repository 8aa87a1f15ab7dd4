import { Client } from 'pg';
import {
  postgresKind,
  type ArchiveColumn,
  type ArchiveTable,
  type CanonicalRow,
  type CanonicalValue,
} from './archive-format';
import { FENCED_WRITE_MESSAGE } from '../database/database-errors';
import {
  canonicalInt,
  FENCE_TRIGGER,
  inCanonicalOrder,
  MIGRATIONS_TABLE,
  NOT_CARRIED,
  quoteName,
  READ_BATCH,
  unreadable,
  type StoreConnection,
  type StoreTable,
} from './store-connection';

/** Every value as the server's text: the kinds are read from it exactly, int8 included. */
const RAW_TEXT = {
  getTypeParser: () => (value: string) => value,
};

/**
 * A PostgreSQL store through one client of its own. A snapshot is a REPEATABLE READ, READ ONLY
 * transaction, read through cursors: the service's writes go on beside it, unseen.
 */
export class PostgresStore implements StoreConnection {
  readonly engine = 'postgres';
  private readonly client: Client;
  private loadedTables: readonly StoreTable[] = [];
  /** Each table's columns' types, as the target declares them: what a restored value is cast to. */
  private readonly types = new Map<string, Map<string, string>>();

  private constructor(client: Client) {
    this.client = client;
  }

  static async connect(url: string, purpose: string): Promise<PostgresStore> {
    const client = new Client({
      connectionString: url,
      types: RAW_TEXT,
      application_name: `plant-store ${purpose}`,
    });
    // an unexpected end of the connection fails the statement waiting on it, not the process
    client.on('error', () => undefined);
    await client.connect();
    return new PostgresStore(client);
  }

  private async query(text: string, values?: unknown[]): Promise<string[][]> {
    const result = await this.client.query<string[]>({
      text,
      values,
      rowMode: 'array',
    });
    return result.rows;
  }

  async beginSnapshot(): Promise<void> {
    await this.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    // the snapshot is taken by the transaction's first statement
    await this.query('SELECT 1');
  }

  async beginLoad(tables: readonly StoreTable[]): Promise<void> {
    await this.query('BEGIN');
    // triggers would publish events for restored rows: off for the load, within its
    // transaction, so that no other session ever sees them off
    for (const { table } of tables) {
      await this.query(`ALTER TABLE ${quoteName(table)} DISABLE TRIGGER USER`);
    }
    this.loadedTables = tables;
  }

  async commit(): Promise<void> {
    for (const { table } of this.loadedTables) {
      await this.query(`ALTER TABLE ${quoteName(table)} ENABLE TRIGGER USER`);
    }
    this.loadedTables = [];
    await this.query('COMMIT');
  }

  async rollback(): Promise<void> {
    this.loadedTables = [];
    await this.query('ROLLBACK');
  }

  async now(): Promise<Date> {
    const [[ms]] = await this.query(
      'SELECT floor(extract(epoch FROM now()) * 1000)::int8::text',
    );
    return new Date(Number(ms));
  }

  async migrations(): Promise<string[] | undefined> {
    const [[exists]] = await this.query('SELECT to_regclass($1) IS NOT NULL', [
      quoteName(MIGRATIONS_TABLE),
    ]);
    if (exists !== 't') return undefined;
    return (
      await this.query(
        `SELECT "name" FROM ${quoteName(MIGRATIONS_TABLE)} ORDER BY "timestamp", "id"`,
      )
    ).map(([name]) => name);
  }

  async tables(): Promise<StoreTable[]> {
    const columns = await this.query(
      `SELECT c.table_name, c.column_name, c.udt_name FROM information_schema.columns c ` +
        `JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name ` +
        `WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE' AND NOT c.table_name = ANY($1) ` +
        `ORDER BY c.table_name, c.ordinal_position`,
      [[...NOT_CARRIED]],
    );
    const keys = await this.query(
      `SELECT child.relname, parent.relname FROM pg_constraint k ` +
        `JOIN pg_class child ON child.oid = k.conrelid JOIN pg_class parent ON parent.oid = k.confrelid ` +
        `WHERE k.contype = 'f' AND child.relnamespace = current_schema()::regnamespace`,
    );
    const tables = new Map<string, StoreTable>();
    this.types.clear();
    for (const [table, name, udt] of columns) {
      if (!tables.has(table)) {
        tables.set(table, { table, columns: [], dependsOn: [] });
        this.types.set(table, new Map());
      }
      tables.get(table)!.columns.push({ name, kind: postgresKind(udt) });
      this.types.get(table)!.set(name, udt);
    }
    for (const [child, parent] of keys)
      tables.get(child)?.dependsOn.push(parent);
    return inCanonicalOrder([...tables.values()]);
  }

  async hasRows(table: string): Promise<boolean> {
    const [[exists]] = await this.query(
      `SELECT EXISTS (SELECT 1 FROM ${quoteName(table)})`,
    );
    return exists === 't';
  }

  async *rows(table: ArchiveTable): AsyncGenerator<CanonicalRow[]> {
    const selected = table.columns.map(({ name, kind }) =>
      kind === 'time'
        ? `floor(extract(epoch FROM ${quoteName(name)}) * 1000)::int8::text`
        : quoteName(name),
    );
    await this.query(
      `DECLARE "archive_rows" NO SCROLL CURSOR FOR SELECT ${selected.join(', ')} FROM ${quoteName(table.table)}`,
    );
    try {
      for (;;) {
        const rows = await this.query(
          `FETCH FORWARD ${READ_BATCH} FROM "archive_rows"`,
        );
        if (rows.length === 0) break;
        yield rows.map((row) =>
          row.map((value, index) =>
            canonical(table.table, table.columns[index], value),
          ),
        );
      }
    } finally {
      await this.query('CLOSE "archive_rows"');
    }
  }

  async clear(table: string): Promise<void> {
    await this.query(`DELETE FROM ${quoteName(table)}`);
  }

  async insert(
    table: ArchiveTable,
    rows: readonly CanonicalRow[],
  ): Promise<void> {
    if (rows.length === 0) return;
    const types = this.types.get(table.table);
    // one array parameter per column, whatever the number of rows
    const values = table.columns.map(({ name, kind }, index) => {
      const asText = `u.c${index}`;
      if (kind === 'bytes') return `decode(${asText}, 'base64')`;
      const type = types?.get(name);
      return type ? `${asText}::${quoteName(type)}` : asText;
    });
    await this.query(
      `INSERT INTO ${quoteName(table.table)} (${table.columns.map(({ name }) => quoteName(name)).join(', ')}) ` +
        `SELECT ${values.join(', ')} FROM unnest(${table.columns.map((_column, index) => `$${index + 1}::text[]`).join(', ')}) ` +
        `AS u(${table.columns.map((_column, index) => `c${index}`).join(', ')})`,
      table.columns.map((_column, index) =>
        rows.map((row) => {
          const value = row[index];
          return value === null ? null : String(value);
        }),
      ),
    );
  }

  async resetSequences(tables: readonly StoreTable[]): Promise<void> {
    const carried = new Set(tables.map(({ table }) => table));
    const counted = await this.query(
      `SELECT table_name, column_name FROM information_schema.columns ` +
        `WHERE table_schema = current_schema() AND (column_default LIKE 'nextval(%' OR is_identity = 'YES')`,
    );
    for (const [table, column] of counted) {
      if (!carried.has(table)) continue;
      await this.query(
        `SELECT setval(pg_get_serial_sequence($1, $2), greatest(coalesce(max(${quoteName(column)}), 0), 1), max(${quoteName(column)}) IS NOT NULL) FROM ${quoteName(table)}`,
        [quoteName(table), column],
      );
    }
  }

  async beginBarrier(): Promise<void> {
    await this.query('BEGIN');
    // the fence's triggers wait for the writes under way on each table: at most this long
    await this.query(`SET LOCAL lock_timeout = '10s'`);
  }

  async fence(tables: readonly string[]): Promise<void> {
    // read_only_sql_transaction: a write refused, answered 503 like a read-only server's
    await this.query(
      `CREATE OR REPLACE FUNCTION ${FENCE_TRIGGER}() RETURNS trigger LANGUAGE plpgsql AS $$ ` +
        `BEGIN RAISE EXCEPTION '${FENCED_WRITE_MESSAGE}' USING ERRCODE = 'read_only_sql_transaction'; END $$`,
    );
    for (const table of tables) {
      await this.query(
        `CREATE TRIGGER ${FENCE_TRIGGER} BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON ${quoteName(table)} ` +
          `FOR EACH STATEMENT EXECUTE FUNCTION ${FENCE_TRIGGER}()`,
      );
    }
  }

  async unfence(): Promise<void> {
    const fenced = await this.query(
      `SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid ` +
        `WHERE t.tgname = $1 AND c.relnamespace = current_schema()::regnamespace`,
      [FENCE_TRIGGER],
    );
    await this.query('BEGIN');
    for (const [table] of fenced) {
      await this.query(`DROP TRIGGER ${FENCE_TRIGGER} ON ${quoteName(table)}`);
    }
    await this.query(`DROP FUNCTION IF EXISTS ${FENCE_TRIGGER}()`);
    await this.query('COMMIT');
  }

  async workUnderWay(): Promise<number> {
    const [[count]] = await this.query(
      `SELECT (SELECT count(*) FROM "webhook_deliveries" WHERE "status" = 'pending' AND "claimed_until" > clock_timestamp()) + ` +
        `(SELECT count(*) FROM "scheduled_jobs" WHERE "leased_until" > clock_timestamp())`,
    );
    return Number(count);
  }

  async run(sql: string, parameters: unknown[]): Promise<void> {
    let index = 0;
    await this.query(
      sql
        .replaceAll('{now}', 'clock_timestamp()')
        .replace(/\?/g, () => `$${++index}`),
      parameters,
    );
  }

  async close(): Promise<void> {
    await this.client.end();
  }
}

/** A value as the server wrote it as text, in the archive's form for its column's kind. */
function canonical(
  table: string,
  column: ArchiveColumn,
  value: string | null,
): CanonicalValue {
  if (value === null) return null;
  switch (column.kind) {
    case 'int':
      return canonicalInt(value) ?? unreadable(table, column, value);
    case 'real': {
      const number = Number(value);
      return Number.isFinite(number)
        ? number
        : unreadable(table, column, value);
    }
    case 'time': {
      const ms = Number(value);
      const date = new Date(ms);
      return Number.isNaN(date.getTime())
        ? unreadable(table, column, value)
        : date.toISOString();
    }
    case 'bool':
      return value === 't' || value === 'true';
    case 'bytes':
      return Buffer.from(value.replace(/^\\x/, ''), 'hex').toString('base64');
    case 'text':
      return value;
  }
}
