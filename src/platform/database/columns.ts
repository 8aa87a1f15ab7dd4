import {
  Column,
  PrimaryColumn,
  VersionColumn,
  type ColumnOptions,
  type PrimaryColumnOptions,
  type ValueTransformer,
} from 'typeorm';

/**
 * int64 columns as exact bigints. better-sqlite3 gives bigints (safe integers are on); pg gives
 * int8 as a string: https://github.com/typeorm/typeorm/issues/2400
 */
const int64Transformer: ValueTransformer = {
  to: (value: bigint | undefined | null) => value,
  from: (value: bigint | string | null) =>
    value === null ? null : BigInt(value),
};

/** Counts and status codes as numbers: with safe integers on, SQLite reads them as bigints. */
const smallIntegerTransformer: ValueTransformer = {
  to: (value: number | undefined | null) => value,
  from: (value: bigint | number | string | null) =>
    value === null ? null : Number(value),
};

/** A primary key that is a true int64, read and written as a bigint on every engine. */
export function Int64PrimaryColumn(
  options: Omit<PrimaryColumnOptions, 'type' | 'transformer'> = {},
): PropertyDecorator {
  return PrimaryColumn({
    ...options,
    type: 'bigint',
    transformer: int64Transformer,
  });
}

/** An int64 column that is not the key (a reference to a plant, say), as a bigint. */
export function Int64Column(
  options: Omit<ColumnOptions, 'type' | 'transformer'> = {},
): PropertyDecorator {
  return Column({ ...options, type: 'bigint', transformer: int64Transformer });
}

/** An integer column small enough for a JS number (counts, status codes), as a number. */
export function SmallIntegerColumn(
  options: Omit<ColumnOptions, 'type' | 'transformer'> = {},
): PropertyDecorator {
  return Column({
    ...options,
    type: 'integer',
    transformer: smallIntegerTransformer,
  });
}

/**
 * A resource's version (docs/decisions.md, "Updates"): 1 when inserted, one more at each
 * `update()` of TypeORM's, which also checks it when the criteria name it, as a number. A
 * column added to a table that already has rows takes `{ default: 1 }`, so that the release
 * before, which inserts without it, still can.
 */
export function VersionNumberColumn(
  options: Pick<ColumnOptions, 'default'> = {},
): PropertyDecorator {
  return VersionColumn({
    ...options,
    type: 'integer',
    transformer: smallIntegerTransformer,
  });
}
