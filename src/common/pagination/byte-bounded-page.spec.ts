import fc from 'fast-check';
import { jsonStringBytes, PageFiller } from './byte-bounded-page';

describe('PageFiller', () => {
  const json = (items: string[]) => Buffer.byteLength(JSON.stringify(items));
  const fill = (rows: string[], limit: number, maxBytes: number) => {
    const page = new PageFiller(limit, maxBytes, jsonStringBytes);
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
    expect(json(rows.slice(0, 2))).toBeLessThanOrEqual(90);
    expect(json(rows)).toBeGreaterThan(90);
    // exactly at the bound still fits
    expect(fill(rows, 3, json(rows))).toEqual(rows);
    expect(fill(rows, 3, json(rows) - 1)).toHaveLength(2);
  });

  it('counts escapes and multi-byte characters', () => {
    const escaped = '\u0001'.repeat(10); // 60 bytes as JSON, 10 characters
    const accents = 'é'.repeat(10); // 20 bytes in UTF-8
    expect(jsonStringBytes(escaped)).toBe(62);
    expect(jsonStringBytes(accents)).toBe(22);
    expect(fill([escaped, escaped], 2, json([escaped, escaped]) - 1)).toEqual([
      escaped,
    ]);
  });

  it('always takes the first item, however large', () => {
    expect(fill(['x'.repeat(500), 'y'], 2, 10)).toEqual(['x'.repeat(500)]);
  });
});

describe('jsonStringBytes', () => {
  const definition = (text: string) => Buffer.byteLength(JSON.stringify(text));

  it('counts what JSON.stringify writes in UTF-8, for any string', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (text) => {
        expect(jsonStringBytes(text)).toBe(definition(text));
      }),
      { numRuns: 2000 },
    );
  });

  it('counts the characters around the plain ASCII range as JSON writes them', () => {
    for (let code = 0; code < 0x100; code += 1) {
      const text = `a${String.fromCharCode(code)}b`;
      expect([code, jsonStringBytes(text)]).toEqual([code, definition(text)]);
    }
    for (const text of ['', '"', '\\', '\u2028', '\ud800', 'plain name']) {
      expect(jsonStringBytes(text)).toBe(definition(text));
    }
  });
});
