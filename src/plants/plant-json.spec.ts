import fc from 'fast-check';
import { stringifyLosslessJson } from '../common/json/lossless-json';
import { Plant } from './plant.entity';
import { plantJson } from './plants.service';

describe('plantJson', () => {
  const plant = (id: bigint, name: string, tag: string | null) =>
    Object.assign(new Plant(), { id, name, tag });

  it('writes any plant as every other answer writes it', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }),
        fc.string({ unit: 'binary' }),
        fc.option(fc.string({ unit: 'binary' })),
        (id, name, tag) => {
          const written = plant(id, name, tag);
          expect(plantJson(written)).toBe(stringifyLosslessJson(written));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('leaves out a null tag, writes an empty one, and escapes what JSON escapes', () => {
    expect(plantJson(plant(2n ** 63n - 1n, 'Basil', null))).toBe(
      '{"id":9223372036854775807,"name":"Basil"}',
    );
    expect(plantJson(plant(-1n, '"\\\u0000\ud800', ''))).toBe(
      '{"id":-1,"name":"\\"\\\\\\u0000\\ud800","tag":""}',
    );
  });
});
