import {
  byteSize,
  duration,
  integer,
  isIdentityProviderUrl,
  parseDuration,
  variable,
  wholeSeconds,
  type Kind,
} from './setting-kinds';

/** What `kind` reads `text` as, or 'refused'. */
function read<T>(kind: Kind<T>, text: string): T | 'refused' {
  const result = kind.schema.safeParse(text);
  return result.success ? result.data : 'refused';
}

// every kind is also read through the whole schema in environment.spec.ts; these are the kinds
// on their own, each edge once
describe('setting kinds', () => {
  it.each([
    ['500ms', 500],
    ['10s', 10_000],
    ['5m', 300_000],
    ['24h', 86_400_000],
    ['2d', 172_800_000],
    [' 3s ', 3000],
  ])('reads the duration %j as %d ms', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['0s', '5', '5 s', '1.5s', '-1s', '5w', `${2 ** 60}d`])(
    'reads %j as no duration: not digits and a unit, not positive, or not a safe integer',
    (text) => {
      expect(parseDuration(text)).toBeUndefined();
    },
  );

  it('takes 0 as a duration only where zero is allowed', () => {
    expect(read(duration(), '0s')).toBe('refused');
    expect(read(duration({ zero: true }), '0ms')).toBe(0);
    expect(read(duration({ zero: true }), '2s')).toBe(2000);
    expect(duration().must).toBe(
      'a positive duration such as 500ms, 10s, 5m, 24h or 2d',
    );
    expect(duration({ zero: true }).must).toBe(
      'a duration such as 500ms, 10s, 5m, 24h or 2d',
    );
  });

  it('takes whole seconds only, for what keeps whole seconds', () => {
    expect(read(wholeSeconds(), '30s')).toBe(30_000);
    expect(read(wholeSeconds(), '2m')).toBe(120_000);
    expect(read(wholeSeconds(), '1500ms')).toBe('refused');
    expect(read(wholeSeconds(), '1000ms')).toBe(1000);
  });

  it('reads integers of digits only, within their bounds', () => {
    const port = integer(1, 10);
    expect(read(port, '1')).toBe(1);
    expect(read(port, '10')).toBe(10);
    for (const text of ['0', '11', '5.0', ' 5', '1e1', '0x5', '']) {
      expect(read(port, text)).toBe('refused');
    }
    expect(port.must).toBe('an integer between 1 and 10');
  });

  it('reads sizes as express writes them, up to their bound', () => {
    const size = byteSize(2 * 1024 ** 2);
    expect(read(size, '16384')).toBe(16_384);
    expect(read(size, '16kb')).toBe(16_384);
    expect(read(size, '2MB')).toBe(2 * 1024 ** 2);
    expect(read(size, '3mb')).toBe('refused');
    expect(read(size, '1gb')).toBe('refused');
  });

  it.each([
    ['https://login.example', true],
    ['http://127.0.0.1:8080', true],
    ['http://localhost:8080', true],
    ['http://[::1]:8080', true],
    ['http://login.example', false],
    ['http://127.example.com', false],
    ['ftp://login.example', false],
    ['login.example', false],
  ])('takes %j as an identity provider URL: %s', (url, taken) => {
    expect(isIdentityProviderUrl(url)).toBe(taken);
  });

  it('gives an unset or empty variable its default, read as a written value is', () => {
    const timeout = variable(duration(), '5s', 'a timeout');
    expect(timeout.parse(undefined)).toBe(5000);
    expect(timeout.parse('')).toBe(5000);
    expect(timeout.parse('2s')).toBe(2000);
    const off = variable(duration(), undefined, 'off unless set');
    expect(off.parse(undefined)).toBeUndefined();
    expect(off.meta()).toEqual({
      fallback: undefined,
      description: 'off unless set',
      must: duration().must,
      secret: false,
    });
    expect(
      variable({ ...duration(), secret: true }, '5s', 'a', '1m').meta(),
    ).toMatchObject({ secret: true, example: '1m' });
  });
});
