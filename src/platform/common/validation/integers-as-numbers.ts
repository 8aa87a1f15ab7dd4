import { int64PropertiesOf } from './int64.decorators';

/**
 * The lossless JSON parser reads every integer as an exact bigint. Only properties declared
 * `@Int64Property()` keep it; every other integer within 2^53 becomes a number, so that a
 * count is a plain number and `@IsInt()`, `@Min()` and `@Max()` work on it. A larger one stays
 * a bigint, which those validators refuse rather than round. A nested DTO is followed through
 * its declared type; objects inside arrays are left as they are. The body is changed in place.
 */
export function integersAsNumbers(value: unknown, type: unknown): void {
  if (typeof value !== 'object' || value === null) return;
  const int64 = int64PropertiesOf(type);
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (int64.has(key)) continue;
    const member = record[key];
    if (typeof member === 'bigint') {
      record[key] = asNumber(member);
    } else if (Array.isArray(member)) {
      // the element type of an array of DTOs is not declared where this can read it: its
      // objects keep their bigints (an int64 among them must stay one)
      member.forEach((item: unknown, index) => {
        if (typeof item === 'bigint') member[index] = asNumber(item);
      });
    } else if (typeof member === 'object' && member !== null) {
      integersAsNumbers(member, declaredType(type, key));
    }
  }
}

/** The class a DTO declares for a property (TypeScript's design:type), for nested DTOs. */
function declaredType(type: unknown, key: string): unknown {
  return typeof type === 'function'
    ? (Reflect.getMetadata(
        'design:type',
        type.prototype as object,
        key,
      ) as unknown)
    : undefined;
}

const asNumber = (integer: bigint): number | bigint =>
  integer >= -9007199254740991n && integer <= 9007199254740991n
    ? Number(integer)
    : integer;
