import dns from 'node:dns';
import {
  describeResolvedProblem,
  describeUrlProblem,
  isPublicAddress,
  publicOnlyLookup,
} from './outbound-target';

describe('isPublicAddress', () => {
  it.each(['93.184.216.34', '8.8.8.8', '2606:2800:220:1:248:1893:25c8:1946'])(
    'accepts the public address %s',
    (address) => {
      expect(isPublicAddress(address)).toBe(true);
    },
  );

  it.each([
    ['loopback', '127.0.0.1'],
    ['loopback', '127.8.9.10'],
    ['IPv6 loopback', '::1'],
    ['private', '10.1.2.3'],
    ['private', '172.16.0.1'],
    ['private', '192.168.0.1'],
    ['link-local metadata', '169.254.169.254'],
    ['carrier-grade NAT', '100.64.0.1'],
    ['unspecified', '0.0.0.0'],
    ['unique-local', 'fd00:ec2::254'],
    ['IPv6 link-local', 'fe80::1'],
    ['IPv4-mapped private', '::ffff:10.0.0.1'],
    ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
    ['IPv4-compatible loopback', '::127.0.0.1'],
    ['IPv4-compatible private', '::10.0.0.1'],
    ['IPv4-compatible public (deprecated)', '::8.8.8.8'],
    ['IPv4-compatible, in hex', '::7f00:1'],
    ['unspecified IPv6', '::'],
    ['multicast', '224.0.0.1'],
    ['broadcast', '255.255.255.255'],
    ['not an address', 'example.com'],
  ])('refuses the %s address %s', (_label, address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
});

describe('describeUrlProblem', () => {
  it('accepts a public http or https URL', () => {
    expect(
      describeUrlProblem('https://hooks.example.com/plants', false),
    ).toBeUndefined();
    expect(
      describeUrlProblem('http://93.184.216.34:8080/x', false),
    ).toBeUndefined();
  });

  it('accepts private targets when they are allowed', () => {
    expect(describeUrlProblem('http://127.0.0.1:9/x', true)).toBeUndefined();
  });

  it.each([
    ['not-a-url', /is not an absolute URL/],
    ['file:///etc/passwd', /must use http or https/],
    ['http://user:pass@example.com/', /must not carry credentials/],
    ['http://user@example.com/', /must not carry credentials/],
    ['http://:pass@example.com/', /must not carry credentials/],
    ['http://localhost:3000/', /loopback name/],
    ['http://api.localhost/', /loopback name/],
    ['http://[::1]:80/', /::1 is not a public address/],
    ['http://[::127.0.0.1]/', /::7f00:1 is not a public address/],
  ])('refuses %s', (url, problem) => {
    expect(describeUrlProblem(url, false)).toMatch(problem);
  });
});

describe('publicOnlyLookup', () => {
  afterEach(() => jest.restoreAllMocks());

  it('passes a resolver failure on as the error, rather than throw', async () => {
    const failure = Object.assign(new Error('getaddrinfo ENOTFOUND nowhere'), {
      code: 'ENOTFOUND',
    });
    jest
      .spyOn(dns, 'lookup')
      .mockImplementation(((
        _host: string,
        _options: unknown,
        callback: (error: Error) => void,
      ) => callback(failure)) as unknown as typeof dns.lookup);
    const result = await new Promise<unknown[]>((resolve) =>
      publicOnlyLookup('nowhere.invalid', {}, (...args) => resolve(args)),
    );
    expect(result).toEqual([failure, []]);
  });

  it('answers with the public addresses it checked, one or all as asked', async () => {
    const addresses = [
      { address: '93.184.216.34', family: 4 },
      { address: '2606:2800:220:1:248:1893:25c8:1946', family: 6 },
    ];
    jest
      .spyOn(dns, 'lookup')
      .mockImplementation(((
        _host: string,
        _options: unknown,
        callback: (error: null, found: unknown) => void,
      ) => callback(null, addresses)) as unknown as typeof dns.lookup);
    const one = await new Promise<unknown[]>((resolve) =>
      publicOnlyLookup('example.com', {}, (...args) => resolve(args)),
    );
    expect(one).toEqual([null, '93.184.216.34', 4]);
    const all = await new Promise<unknown[]>((resolve) =>
      publicOnlyLookup('example.com', { all: true }, (...args) =>
        resolve(args),
      ),
    );
    expect(all).toEqual([null, addresses]);
  });

  it('refuses a name that resolves to loopback', async () => {
    const error = await new Promise<NodeJS.ErrnoException | null>((resolve) =>
      publicOnlyLookup('localhost', {}, (failure) => resolve(failure)),
    );
    expect(error?.code).toBe('ENOTPUBLIC');
    // which address, never: lastError is the subscriber's to read
    expect(error?.message).toBe(
      'localhost resolves to an address that is not public',
    );
  });
});

describe('describeUrlProblem, for names and text', () => {
  it.each([
    ['localhost.', 'localhost is a loopback name'],
    ['foo.localhost.', 'foo.localhost is a loopback name'],
  ])('refuses %s, a loopback name with its final dot', (host, message) => {
    expect(describeUrlProblem(`https://${host}/hook`, false)).toMatch(
      new RegExp(`^${message}`),
    );
  });

  it.each([
    ['https://example.com/\u001b[31m', 'U+001B at character 21'],
    ['https://example.com/a\r\nb', 'U+000D at character 22'],
    ['https://example.com/\u202etxt.exe', 'U+202E at character 21'],
    ['https://exa\u200bmple.com/', 'U+200B at character 12'],
    ['https://example.com/\u2028', 'U+2028 at character 21'],
  ])(
    'refuses a URL holding a control or invisible character: %j',
    (url, which) => {
      expect(describeUrlProblem(url, true)).toBe(
        `url must not contain control or invisible characters (a line break, an escape, a bidirectional override), got ${which}`,
      );
    },
  );
});

describe('describeResolvedProblem', () => {
  afterEach(() => jest.restoreAllMocks());

  const resolving = (addresses: string[] | Error) =>
    jest.spyOn(dns, 'lookup').mockImplementation(((
      _host: string,
      _options: unknown,
      callback: (error: Error | null, found: unknown) => void,
    ) =>
      addresses instanceof Error
        ? callback(addresses, [])
        : callback(
            null,
            addresses.map((address) => ({
              address,
              family: address.includes(':') ? 6 : 4,
            })),
          )) as unknown as typeof dns.lookup);

  it('refuses a name that resolves to a non-public address, without saying which', async () => {
    resolving(['93.184.216.34', '::1']);
    expect(await describeResolvedProblem('https://ip6-localhost/hook')).toBe(
      'ip6-localhost resolves to an address that is not public; set WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true to allow it',
    );
  });

  it('takes a name that resolves to public addresses only, or not yet at all', async () => {
    resolving(['93.184.216.34']);
    expect(
      await describeResolvedProblem('https://example.com/'),
    ).toBeUndefined();
    resolving(new Error('ENOTFOUND'));
    expect(
      await describeResolvedProblem('https://not-yet.example/'),
    ).toBeUndefined();
  });

  it('takes a name whose resolver does not answer within two seconds', async () => {
    jest.useFakeTimers();
    try {
      jest.spyOn(dns, 'lookup').mockImplementation(() => undefined);
      let answer: string | undefined = 'none yet';
      const answered = describeResolvedProblem('https://slow.example/').then(
        (problem) => (answer = problem),
      );
      await jest.advanceTimersByTimeAsync(1999);
      expect(answer).toBe('none yet');
      await jest.advanceTimersByTimeAsync(1);
      await answered;
      expect(answer).toBeUndefined();
    } finally {
      jest.useRealTimers();
    }
  });

  it('does not resolve an address', async () => {
    const lookup = resolving(['127.0.0.1']);
    expect(
      await describeResolvedProblem('https://[2606:2800:220:1::1]/'),
    ).toBeUndefined();
    expect(lookup).not.toHaveBeenCalled();
  });
});
