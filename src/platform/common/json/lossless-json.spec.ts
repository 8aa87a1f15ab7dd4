import {
  JsonText,
  parseLosslessJson,
  stringifyLosslessJson,
} from './lossless-json';

describe('parseLosslessJson', () => {
  it('reads integers as exact bigints, even above 2^53', () => {
    expect(parseLosslessJson('{"id":9007199254740993,"n":[1,-0,5.0]}')).toEqual(
      {
        id: 9007199254740993n,
        n: [1n, 0n, 5n],
      },
    );
  });

  it('reads fractions and numbers far outside int64 as JS numbers', () => {
    expect(parseLosslessJson('[1.5,1e400,-2.5e-3]')).toEqual([
      1.5,
      Infinity,
      -0.0025,
    ]);
  });

  it('drops __proto__, constructor and prototype keys at every depth', () => {
    const parsed = parseLosslessJson(
      '{"__proto__":{"polluted":true},"a":{"constructor":{"prototype":{"x":1}},"b":"kept"}}',
    ) as Record<string, unknown>;
    expect(parsed).toEqual({ a: { b: 'kept' } });
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('throws a SyntaxError that says where', () => {
    expect(() => parseLosslessJson('{"a":}')).toThrow(/position 5/);
  });
});

describe('stringifyLosslessJson', () => {
  it('writes JSON already written as it is', () => {
    expect(stringifyLosslessJson(new JsonText('[{"id":1}]'))).toBe(
      '[{"id":1}]',
    );
    expect(stringifyLosslessJson({ text: '[]' })).toBe('{"text":"[]"}');
  });

  it('writes a value once, with its headers, and adds headers keeping text and status', () => {
    const written = JsonText.of({ id: 5n, tag: null }, { ETag: '"2"' });
    expect([written.text, written.headers, written.status]).toEqual([
      '{"id":5}',
      { ETag: '"2"' },
      undefined,
    ]);
    const replayed = new JsonText('{}', { Location: '/x' }, 201).with({
      'Idempotent-Replayed': 'true',
    });
    expect([replayed.text, replayed.headers, replayed.status]).toEqual([
      '{}',
      { Location: '/x', 'Idempotent-Replayed': 'true' },
      201,
    ]);
  });

  it('writes bigints as exact JSON numbers', () => {
    expect(
      stringifyLosslessJson({ id: -9223372036854775808n, name: 'x' }),
    ).toBe('{"id":-9223372036854775808,"name":"x"}');
  });

  it('leaves out members whose value is null, at every depth, and keeps nulls in arrays', () => {
    expect(
      stringifyLosslessJson({
        id: 1n,
        tag: null,
        nested: { a: null, b: 'b' },
        list: [null, 2n],
      }),
    ).toBe('{"id":1,"nested":{"b":"b"},"list":[null,2]}');
  });

  it('escapes strings as JSON.stringify does', () => {
    const value = { name: 'a"b\\c\u0000\n' };
    expect(stringifyLosslessJson(value)).toBe(JSON.stringify(value));
  });
});
