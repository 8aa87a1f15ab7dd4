import {
  boundedPage,
  jsonStringBytes,
  jsonStringBytesAtMost,
  type JsonSize,
} from './byte-bounded-page';

describe('boundedPage', () => {
  const strings: JsonSize<string> = {
    atMost: (text) => jsonStringBytesAtMost(text.length),
    exactly: jsonStringBytes,
  };
  const json = (items: string[]) => Buffer.byteLength(JSON.stringify(items));

  it('returns the first `limit` rows, and whether more follow, when they fit', () => {
    expect(boundedPage(['a', 'b', 'c'], 2, 1000, strings)).toEqual({
      items: ['a', 'b'],
      hasMore: true,
    });
    expect(boundedPage(['a', 'b'], 2, 1000, strings)).toEqual({
      items: ['a', 'b'],
      hasMore: false,
    });
    expect(boundedPage([], 2, 1000, strings)).toEqual({
      items: [],
      hasMore: false,
    });
  });

  it('stops filling where the JSON array would pass maxBytes, and says more follow', () => {
    const rows = ['x'.repeat(40), 'y'.repeat(40), 'z'.repeat(40)];
    const page = boundedPage(rows, 3, 90, strings);
    expect(page).toEqual({ items: rows.slice(0, 2), hasMore: true });
    expect(json(page.items)).toBeLessThanOrEqual(90);
    expect(json(rows)).toBeGreaterThan(90);
    // exactly at the bound still fits
    expect(boundedPage(rows, 3, json(rows), strings)).toEqual({
      items: rows,
      hasMore: false,
    });
    expect(boundedPage(rows, 3, json(rows) - 1, strings).items).toHaveLength(2);
  });

  it('counts escapes and multi-byte characters', () => {
    const escaped = '\u0001'.repeat(10); // 60 bytes as JSON, 10 characters
    const accents = 'é'.repeat(10); // 20 bytes in UTF-8
    expect(jsonStringBytes(escaped)).toBe(62);
    expect(jsonStringBytes(accents)).toBe(22);
    expect(
      boundedPage([escaped, escaped], 2, json([escaped, escaped]) - 1, strings)
        .items,
    ).toEqual([escaped]);
  });

  it('always returns at least one row, however large', () => {
    expect(boundedPage(['x'.repeat(500), 'y'], 2, 10, strings)).toEqual({
      items: ['x'.repeat(500)],
      hasMore: true,
    });
  });
});
