import type { ValueTransformer } from 'typeorm';

/**
 * int64 columns as exact bigints. better-sqlite3 gives bigints (safe integers are on); pg gives
 * int8 as a string: https://github.com/typeorm/typeorm/issues/2400
 */
export const bigintTransformer: ValueTransformer = {
  to: (value: bigint | undefined | null) => value,
  from: (value: bigint | string | null) =>
    value === null ? null : BigInt(value),
};

/** Small integer columns (counts, status codes) as numbers, since safe integers make them bigints. */
export const smallIntegerTransformer: ValueTransformer = {
  to: (value: number | undefined | null) => value,
  from: (value: bigint | number | string | null) =>
    value === null ? null : Number(value),
};
