import fc from 'fast-check';
import { stringifyLosslessJson } from '../../platform/common/json';
import type { PlantRow } from './plants.repository';
import { plantJson } from './plants.service';

describe('plantJson', () => {
  // the specification's Plant, as the generic writer would write it
  const plant = (id: bigint, name: string, tag: string | null) => ({
    id,
    name,
    tag,
  });

  it('writes any row, its id as either driver reads it, as the generic writer writes the Plant', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        fc.string({ unit: 'binary' }),
        fc.option(fc.string({ unit: 'binary' })),
        (id, name, tag) => {
          const expected = stringifyLosslessJson(plant(id, name, tag));
          const rows: PlantRow[] = [
            { id, name, tag }, // SQLite
            { id: String(id), name, tag }, // PostgreSQL's int8
          ];
          for (const row of rows) expect(plantJson(row)).toBe(expected);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('leaves out a null tag, writes an empty one, and escapes what JSON escapes', () => {
    expect(plantJson({ id: 2n ** 63n - 1n, name: 'Basil', tag: null })).toBe(
      '{"id":9223372036854775807,"name":"Basil"}',
    );
    expect(plantJson({ id: '-1', name: '"\\\u0000\ud800', tag: '' })).toBe(
      '{"id":-1,"name":"\\"\\\\\\u0000\\ud800","tag":""}',
    );
  });

  it('leaves out the version, which answers carry as the ETag', () => {
    const row = { id: 5n, name: 'Fern', tag: null, version: 4 };
    expect(plantJson(row)).toBe('{"id":5,"name":"Fern"}');
  });
});
