import { PageFiller } from './byte-bounded-page';

describe('PageFiller', () => {
  const bytes = (items: string[]) => Buffer.byteLength(JSON.stringify(items));
  const fill = (rows: string[], limit: number, maxBytes: number) => {
    const page = new PageFiller(limit, maxBytes, (row: string) =>
      JSON.stringify(row),
    );
    const taken = rows.filter((row) => page.offer(row));
    expect(taken).toEqual(page.items);
    return page.items;
  };

  it('takes at most `limit` items', () => {
    expect(fill(['a', 'b', 'c'], 2, 1000)).toEqual(['a', 'b']);
    expect(fill(['a', 'b'], 2, 1000)).toEqual(['a', 'b']);
    expect(fill([], 2, 1000)).toEqual([]);
  });

  it('stops where the JSON array would pass maxBytes', () => {
    const rows = ['x'.repeat(40), 'y'.repeat(40), 'z'.repeat(40)];
    expect(fill(rows, 3, 90)).toEqual(rows.slice(0, 2));
    expect(bytes(rows.slice(0, 2))).toBeLessThanOrEqual(90);
    expect(bytes(rows)).toBeGreaterThan(90);
    // exactly at the bound still fits
    expect(fill(rows, 3, bytes(rows))).toEqual(rows);
    expect(fill(rows, 3, bytes(rows) - 1)).toHaveLength(2);
  });

  it('counts UTF-8 bytes, escapes and multi-byte characters included', () => {
    const escaped = '\u0001'.repeat(10); // 60 bytes as JSON, 10 characters
    const accents = 'é'.repeat(10); // 20 bytes in UTF-8
    expect(fill([accents, accents], 2, bytes([accents, accents]))).toEqual([
      accents,
      accents,
    ]);
    expect(fill([accents, accents], 2, bytes([accents, accents]) - 1)).toEqual([
      accents,
    ]);
    expect(fill([escaped, escaped], 2, bytes([escaped, escaped]) - 1)).toEqual([
      escaped,
    ]);
  });

  it('always takes the first item, however large', () => {
    expect(fill(['x'.repeat(500), 'y'], 2, 10)).toEqual(['x'.repeat(500)]);
  });

  it('answers with the JSON array of what it took, each item written once', () => {
    const jsonOf = jest.fn((row: string) => JSON.stringify(row));
    const page = new PageFiller(2, 1000, jsonOf);
    for (const row of ['a"', 'é', 'c']) page.offer(row);
    expect(page.done(true)).toEqual({
      items: ['a"', 'é'],
      hasMore: true,
      json: { text: '["a\\"","é"]' },
    });
    expect(new PageFiller(2, 1000, jsonOf).done(false).json.text).toBe('[]');
    expect(jsonOf).toHaveBeenCalledTimes(2);
  });
});
