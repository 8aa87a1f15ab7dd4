import type {
  DataSource,
  EntityMetadata,
  EntityTarget,
  ObjectLiteral,
  QueryResult,
} from 'typeorm';
import { columnReaderOf, type ColumnReader } from './column-readers';
import { DuplicateKeyError, uniqueKeyColumnsOf } from './database-errors';
import { NumberedPlaceholders } from './numbered-placeholders';
import { PortableDataSource } from './portable-data-source';
import { closeWith, transactionRunnerOf } from './transaction-context';

/**
 * Hand-written SQL for an entity, for the queries on a request's hot path, where the cost of
 * TypeORM's query builder shows in the benchmark (bench/README.md). It runs on TypeORM's public
 * API only (DataSource, QueryRunner, the entity's metadata), and one text serves every engine:
 * `parameter(n)` spells the n-th placeholder (`$n`, `?n`), bound by its number on both
 * engines, and rows are read into entities through the entity's column metadata (names,
 * transformers, dates), as the Repository API reads them. Each call is one statement, atomic
 * on its own; inside a transaction it takes part in it (docs/conventions.md, "Business
 * rules").
 */
export class EntitySql<Entity extends ObjectLiteral> {
  private readonly metadata: EntityMetadata;
  private readonly insertStatement: string;
  private readonly dataSource: PortableDataSource;
  /** A row's columns into an entity, one reader a column (column-readers.ts). */
  private readonly readers: ColumnReader[];

  /**
   * The entity's columns, by name, for a SELECT list. Never `SELECT *`: a column a newer
   * release adds would change the statement's result, which PostgreSQL refuses to a statement
   * prepared before (docs/operations.md, "Upgrades").
   */
  readonly columns: string;

  constructor(dataSource: DataSource, entity: EntityTarget<Entity>) {
    if (!(dataSource instanceof PortableDataSource)) {
      throw new TypeError(
        "EntitySql runs on the service's PortableDataSource (database.module.ts)",
      );
    }
    this.dataSource = dataSource;
    this.metadata = dataSource.getMetadata(entity);
    const { driver } = dataSource;
    this.numbered =
      driver.options.type === 'postgres'
        ? undefined
        : new NumberedPlaceholders();
    const columns = this.metadata.columns
      .map((column) => driver.escape(column.databaseName))
      .join(', ');
    this.columns = columns;
    const values = this.metadata.columns
      .map((_column, index) => this.parameter(index + 1))
      .join(', ');
    this.readers = this.metadata.columns.map((column) =>
      columnReaderOf(column, driver),
    );
    this.insertStatement = `INSERT INTO ${driver.escape(this.metadata.tableName)} (${columns}) VALUES (${values})`;
  }

  /**
   * The n-th parameter's placeholder, counting from 1: `$n` on PostgreSQL, `?n` on SQLite. A
   * statement may use them in any order and more than once.
   */
  readonly parameter = (position: number): string => {
    if (!Number.isSafeInteger(position) || position < 1) {
      throw new RangeError(
        `a parameter's position counts from 1, not ${position}`,
      );
    }
    return this.numbered ? `?${position}` : `$${position}`;
  };

  /** SQLite binds `?` by order; its `?n` is rewritten once per text (numbered-placeholders). */
  private readonly numbered: NumberedPlaceholders | undefined;

  /**
   * Inserts one entity, every column written. A row that takes a unique key already held
   * rejects with a DuplicateKeyError naming the entity and the key, which the exception filter
   * answers with 400 (docs/decisions.md, "Duplicate ids").
   */
  async insert(entity: Entity): Promise<void> {
    const { driver } = this.dataSource;
    const values = this.metadata.columns.map((column): unknown =>
      driver.preparePersistentValue(column.getEntityValue(entity), column),
    );
    try {
      await this.write(this.insertStatement, values);
    } catch (error) {
      const columns = uniqueKeyColumnsOf(error);
      if (!columns) throw error;
      throw new DuplicateKeyError(
        this.metadata.targetName,
        columns.map((name) => [name, this.valueOf(entity, name)]),
        error,
      );
    }
  }

  /**
   * `value` as the engine stores the entity's `property`, to bind in a statement: a Date
   * becomes SQLite's datetime text, which compares as text with the column's values.
   */
  stored<Property extends keyof Entity & string>(
    property: Property,
    value: Entity[Property],
  ): unknown {
    const column = this.metadata.findColumnWithPropertyName(property);
    if (!column) {
      throw new TypeError(
        `${this.metadata.targetName} has no column ${property}`,
      );
    }
    return this.dataSource.driver.preparePersistentValue(value, column);
  }

  /** The rows a SELECT (or a statement with RETURNING) yields, as entities. */
  async select(sql: string, parameters: unknown[]): Promise<Entity[]> {
    const { records } = await this.run(sql, parameters);
    return records.map((row) => this.hydrate(row as Record<string, unknown>));
  }

  /**
   * The rows a SELECT yields as the driver reads them, not made into entities: for rows that
   * are written straight out, a page of a list, where an entity apiece is the largest cost after
   * the statement (bench/README.md, "Issue 50"). Each driver spells some types its own way: an
   * int64 is a bigint on SQLite and its decimal digits on PostgreSQL.
   */
  async selectRows<Row>(sql: string, parameters: unknown[]): Promise<Row[]> {
    const { records } = await this.run(sql, parameters);
    return records as Row[];
  }

  /**
   * The rows a SELECT yields, each as an entity and as its raw row, for the values a statement
   * computes beside the entity's columns (a count, say).
   */
  async selectWithRows(
    sql: string,
    parameters: unknown[],
  ): Promise<{ entity: Entity; row: Record<string, unknown> }[]> {
    const { records } = await this.run(sql, parameters);
    return (records as Record<string, unknown>[]).map((row) => ({
      entity: this.hydrate(row),
      row,
    }));
  }

  async selectOne(
    sql: string,
    parameters: unknown[],
  ): Promise<Entity | undefined> {
    return (await this.select(sql, parameters))[0];
  }

  /** Runs an UPDATE or DELETE with RETURNING; resolves to the rows it changed, as entities. */
  async change(sql: string, parameters: unknown[]): Promise<Entity[]> {
    const { records } = await this.write(sql, parameters);
    return records.map((row) => this.hydrate(row as Record<string, unknown>));
  }

  /** Runs an INSERT, UPDATE or DELETE; resolves to the number of rows it changed. */
  async execute(sql: string, parameters: unknown[]): Promise<number> {
    return (await this.write(sql, parameters)).affected ?? 0;
  }

  /**
   * Ends the caller's transaction with this UPDATE, once its work is done: the transaction
   * commits only if the UPDATE changes a row, and otherwise rolls back and fails with
   * ClosingUpdateChangedNothing (`closeWith`, transaction-context.ts). On PostgreSQL the two
   * take one round trip.
   */
  closeTransactionWith(text: string, values: unknown[]): void {
    const [sql, parameters] = this.bound(text, values);
    closeWith(this.dataSource, { sql, parameters });
  }

  /** A write; outside a transaction it is committed once it has run. */
  private async write(text: string, values: unknown[]): Promise<QueryResult> {
    const result = await this.run(text, values);
    if (!transactionRunnerOf(this.dataSource)) this.dataSource.writeCommitted();
    return result;
  }

  /**
   * Through a query runner, for results of the same shape on every engine (`DataSource.query`
   * answers a DELETE with rows on one and `[rows, count]` on the other): inside a transaction,
   * its runner; elsewhere the data source's `plainStatement`.
   */
  private run(text: string, values: unknown[]): Promise<QueryResult> {
    const [sql, parameters] = this.bound(text, values);
    const joined = transactionRunnerOf(this.dataSource);
    if (joined) return joined.query(sql, parameters, true);
    return this.dataSource.plainStatement(sql, parameters);
  }

  /** `text` and `values` as the engine's driver binds them (`?n` rewritten once per text on SQLite). */
  private bound(text: string, values: unknown[]): [string, unknown[]] {
    return this.numbered ? this.numbered.bind(text, values) : [text, values];
  }

  private hydrate(row: Record<string, unknown>): Entity {
    const entity = this.metadata.create() as Entity;
    for (const read of this.readers) read(entity, row);
    return entity;
  }

  private valueOf(entity: Entity, databaseName: string): unknown {
    return this.metadata
      .findColumnWithDatabaseName(databaseName)
      ?.getEntityValue(entity);
  }
}
