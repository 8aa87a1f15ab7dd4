import type {
  DataSource,
  EntityMetadata,
  EntityTarget,
  ObjectLiteral,
  QueryResult,
} from 'typeorm';
import { DuplicateKeyError, uniqueKeyColumnsOf } from './database-errors';

/**
 * Hand-written SQL for an entity, for the queries on a request's hot path, where the cost of
 * TypeORM's query builder shows in the benchmark (bench/README.md). It runs on TypeORM's public
 * API only (DataSource, QueryRunner, the entity's metadata), and one text serves every engine:
 * `parameter(n)` spells the driver's own placeholder, and rows are read into entities through
 * the entity's column metadata (names, transformers, dates), as the Repository API reads them.
 * Each call is one statement, so it is atomic on its own, on SQLite's single shared connection
 * too (docs/adding-a-module.md, "One statement per change").
 */
export class EntitySql<Entity extends ObjectLiteral> {
  private readonly metadata: EntityMetadata;
  private readonly insertStatement: string;

  constructor(
    private readonly dataSource: DataSource,
    entity: EntityTarget<Entity>,
  ) {
    this.metadata = dataSource.getMetadata(entity);
    const { driver } = dataSource;
    const columns = this.metadata.columns
      .map((column) => driver.escape(column.databaseName))
      .join(', ');
    const values = this.metadata.columns
      .map((_column, index) => this.parameter(index + 1))
      .join(', ');
    this.insertStatement = `INSERT INTO ${driver.escape(this.metadata.tableName)} (${columns}) VALUES (${values})`;
  }

  /** The driver's placeholder for the n-th parameter, counting from 1: `?` or `$n`. */
  readonly parameter = (position: number): string =>
    this.dataSource.driver.createParameter(`p${position}`, position - 1);

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
      await this.run(this.insertStatement, values);
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

  /** The rows a SELECT (or a statement with RETURNING) yields, as entities. */
  async select(sql: string, parameters: unknown[]): Promise<Entity[]> {
    const { records } = await this.run(sql, parameters);
    return records.map((row) => this.hydrate(row as Record<string, unknown>));
  }

  async selectOne(
    sql: string,
    parameters: unknown[],
  ): Promise<Entity | undefined> {
    return (await this.select(sql, parameters))[0];
  }

  /** Runs an INSERT, UPDATE or DELETE; resolves to the number of rows it changed. */
  async execute(sql: string, parameters: unknown[]): Promise<number> {
    return (await this.run(sql, parameters)).affected ?? 0;
  }

  /**
   * Through a query runner, for results of the same shape on every engine (`DataSource.query`
   * answers a DELETE with rows on one and `[rows, count]` on the other). The driver's runner,
   * not `DataSource.createQueryRunner`, which also builds an EntityManager per call that plain
   * SQL never uses.
   */
  private async run(sql: string, parameters: unknown[]): Promise<QueryResult> {
    const runner = this.dataSource.driver.createQueryRunner('master');
    try {
      return await runner.query(sql, parameters, true);
    } finally {
      await runner.release();
    }
  }

  private hydrate(row: Record<string, unknown>): Entity {
    const entity = this.metadata.create() as Entity;
    for (const column of this.metadata.columns) {
      if (column.databaseName in row) {
        column.setEntityValue(
          entity,
          this.dataSource.driver.prepareHydratedValue(
            row[column.databaseName],
            column,
          ),
        );
      }
    }
    return entity;
  }

  private valueOf(entity: Entity, databaseName: string): unknown {
    return this.metadata
      .findColumnWithDatabaseName(databaseName)
      ?.getEntityValue(entity);
  }
}
