export interface Page<T> {
  items: T[];
  /** Set when more items follow the last one of this page. */
  hasMore: boolean;
}

export interface JsonSize<T> {
  /** A cheap bound the item's JSON never exceeds, in bytes. */
  atMost: (item: T) => number;
  /** The item's JSON in bytes, exactly. */
  exactly: (item: T) => number;
}

/**
 * The longest JSON text of a string of `length` UTF-16 units: six bytes a unit when every
 * unit is escaped (`\u001f`), plus the quotes.
 */
export function jsonStringBytesAtMost(length: number): number {
  return 6 * length + 2;
}

/** The bytes of a string as a JSON string in UTF-8, escapes and quotes included. */
export function jsonStringBytes(text: string): number {
  return Buffer.byteLength(JSON.stringify(text));
}

/**
 * A page of the first `limit` of `rows` (which holds one more when more follow) whose JSON
 * array stays within `maxBytes`, with at least one item so that paging always moves on. When
 * even the cheap bound fits, nothing is measured exactly.
 */
export function boundedPage<T>(
  rows: T[],
  limit: number,
  maxBytes: number,
  size: JsonSize<T>,
): Page<T> {
  const candidates = rows.length > limit ? rows.slice(0, limit) : rows;
  let bound = 2;
  for (const row of candidates) bound += size.atMost(row) + 1;
  if (bound <= maxBytes) {
    return { items: candidates, hasMore: rows.length > limit };
  }
  let bytes = 2;
  let count = 0;
  for (const row of candidates) {
    bytes += size.exactly(row) + (count > 0 ? 1 : 0);
    if (bytes > maxBytes && count > 0) break;
    count += 1;
  }
  return {
    items: candidates.slice(0, count),
    hasMore: rows.length > count,
  };
}
