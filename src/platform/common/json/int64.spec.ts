import {
  INT64_MAX,
  INT64_MIN,
  isInt64,
  parseInt64Text,
  parseIntegerText,
} from './int64';

describe('parseIntegerText', () => {
  it.each([
    ['0', 0n],
    ['-0', 0n],
    ['5', 5n],
    ['5.0', 5n],
    ['5e0', 5n],
    ['5E+0', 5n],
    ['50e-1', 5n],
    ['0.5e1', 5n],
    ['1e3', 1000n],
    ['9007199254740993', 9007199254740993n],
    ['9223372036854775807', INT64_MAX],
    ['-9223372036854775808', INT64_MIN],
    ['9223372036854775808', 9223372036854775808n],
    ['00012', 12n],
  ])('reads %s exactly as %s', (text, expected) => {
    expect(parseIntegerText(text)).toBe(expected);
  });

  it.each(['1.5', '0.1', '5e-1', '9007199254740993.5', '1e-400'])(
    'finds no integer in the fraction %s',
    (text) => {
      expect(parseIntegerText(text)).toBeUndefined();
    },
  );

  it.each(['1e21', '1e400', '123456789012345678901', '1e999999999999'])(
    'does not build a bigint for %s, far outside int64',
    (text) => {
      expect(parseIntegerText(text)).toBeUndefined();
    },
  );

  it.each(['', '-', 'abc', '1e', '.5', '0x10', ' 1'])(
    'rejects the non-number %j',
    (text) => {
      expect(parseIntegerText(text)).toBeUndefined();
    },
  );
});

describe('isInt64', () => {
  it('accepts both ends of the range', () => {
    expect(isInt64(INT64_MIN)).toBe(true);
    expect(isInt64(INT64_MAX)).toBe(true);
  });

  it('rejects one past either end', () => {
    expect(isInt64(INT64_MIN - 1n)).toBe(false);
    expect(isInt64(INT64_MAX + 1n)).toBe(false);
  });

  it.each([5, 1.5, '5', true, null, undefined, {}])(
    'rejects the non-bigint %p',
    (value) => {
      expect(isInt64(value)).toBe(false);
    },
  );
});

describe('parseInt64Text', () => {
  it('reads plain decimal integers in range', () => {
    expect(parseInt64Text('42')).toBe(42n);
    expect(parseInt64Text('-9223372036854775808')).toBe(INT64_MIN);
    expect(parseInt64Text('9223372036854775807')).toBe(INT64_MAX);
  });

  it.each([
    '9223372036854775808',
    '-9223372036854775809',
    '1.0',
    '1e3',
    '+1',
    '',
    ' 1',
    '0x1',
  ])('rejects %j', (text) => {
    expect(parseInt64Text(text)).toBeUndefined();
  });
});
