import { clientKeyOf } from './client-key';

describe('clientKeyOf', () => {
  it('counts an IPv6 client by its /64: every address of one host is one client', () => {
    expect(clientKeyOf('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe(
      '2001:db8:1:2::/64',
    );
    expect(clientKeyOf('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(clientKeyOf('2001:db8:1:3::1')).toBe('2001:db8:1:3::/64');
  });

  it('counts an IPv4 client by its address, mapped into IPv6 or not', () => {
    expect(clientKeyOf('203.0.113.7')).toBe('203.0.113.7');
    expect(clientKeyOf('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(clientKeyOf('::ffff:cb00:7107')).toBe('203.0.113.7');
  });

  it('counts an IPv6 address that embeds an IPv4 one by its /64, unless it is IPv4-mapped', () => {
    expect(clientKeyOf('64:ff9b::203.0.113.7')).toBe('64:ff9b:0:0::/64');
  });

  it('keeps what is not an address as it is', () => {
    expect(clientKeyOf('')).toBe('');
    expect(clientKeyOf('not:an:address')).toBe('not:an:address');
  });
});
