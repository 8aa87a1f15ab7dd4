import type { Driver, EntityMetadata, ObjectLiteral } from 'typeorm';

/** TypeORM exports no ColumnMetadata from its root: an entity's column, by way of its metadata. */
type ColumnMetadata = EntityMetadata['columns'][number];

/** Column types whose values both drivers hydrate unchanged, when no transformer is set. */
const TEXT_TYPES = new Set<unknown>([
  'text',
  'varchar',
  'character varying',
  String,
]);

/** Copies one column of a row into an entity, if the row has that column. */
export type ColumnReader = (
  entity: ObjectLiteral,
  row: Record<string, unknown>,
) => void;

/**
 * Whether TypeORM would hydrate the column's value as it is: a text column with no
 * transformer, on the entity itself (not embedded, not a relation's virtual column).
 */
export function readsAsIs(column: ColumnMetadata): boolean {
  return (
    TEXT_TYPES.has(column.type) &&
    !column.transformer &&
    !column.embeddedMetadata &&
    !column.isVirtual &&
    !column.relationMetadata
  );
}

/**
 * How a row's column reaches an entity: a plain assignment where TypeORM would change
 * nothing, else TypeORM's own conversion (`prepareHydratedValue`, then `setEntityValue`), as
 * the Repository API reads it. The assignment spares a page of a hundred rows some hundreds of
 * calls through the driver's type switch (bench/README.md, "Issue 38").
 */
export function columnReaderOf(
  column: ColumnMetadata,
  driver: Driver,
): ColumnReader {
  const name = column.databaseName;
  if (readsAsIs(column)) {
    const property = column.propertyName;
    return (entity, row) => {
      if (name in row) entity[property] = row[name];
    };
  }
  return (entity, row) => {
    if (name in row) {
      column.setEntityValue(
        entity,
        driver.prepareHydratedValue(row[name], column),
      );
    }
  };
}
