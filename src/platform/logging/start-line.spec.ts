import { describeTrustProxy, hidePassword } from './start-line';

describe('the start line', () => {
  it('shows a URL with its password hidden, its user and host kept', () => {
    expect(hidePassword('redis://app:s3cret@cache:6379/2')).toBe(
      'redis://app:***@cache:6379/2',
    );
    expect(hidePassword('redis://:s3cret@cache:6379')).toBe(
      'redis://:***@cache:6379',
    );
    expect(hidePassword('redis://cache:6379')).toBe('redis://cache:6379');
  });

  it('says whose forwarded headers are believed', () => {
    expect(describeTrustProxy(false)).toBe('trusting no proxy');
    expect(describeTrustProxy(true)).toBe('trusting any peer as a proxy');
    expect(describeTrustProxy(2)).toBe('trusting 2 proxy hops');
    expect(describeTrustProxy(['loopback', '10.0.0.0/8'])).toBe(
      'trusting the proxies at loopback, 10.0.0.0/8',
    );
  });
});
