import ipaddr from 'ipaddr.js';

const IPV4_MAPPED = '::ffff:';

/**
 * Who a client address is, for rate limits and blocks: an IPv4 address itself, an IPv6
 * address by its /64. One host is given a whole /64 (SLAAC, privacy addresses), so counting
 * per /128 would let it take 2^64 fresh counters. An IPv4-mapped IPv6 address is its IPv4.
 * Every request asks: IPv4, the common case, is answered without parsing.
 */
export function clientKeyOf(address: string): string {
  // Stryker disable next-line all: shortcuts, for speed; the parse below gives the same keys
  if (!address.includes(':')) return address;
  // Stryker disable next-line all: as above
  if (address.startsWith(IPV4_MAPPED) && address.includes('.')) {
    return address.slice(IPV4_MAPPED.length);
  }
  if (!ipaddr.IPv6.isValid(address)) return address;
  const parsed = ipaddr.IPv6.parse(address);
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString();
  const prefix = parsed.parts.slice(0, 4).map((part) => part.toString(16));
  return `${prefix.join(':')}::/64`;
}
