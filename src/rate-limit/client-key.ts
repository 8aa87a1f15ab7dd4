import ipaddr from 'ipaddr.js';

/**
 * Who a client address is, for rate limits and blocks: an IPv4 address itself, an IPv6
 * address by its /64. One host is given a whole /64 (SLAAC, privacy addresses), so counting
 * per /128 would let it take 2^64 fresh counters. An IPv4-mapped IPv6 address is its IPv4.
 */
export function clientKeyOf(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === 'ipv4') return parsed.toString();
  const parts = (parsed as ipaddr.IPv6).parts.slice(0, 4);
  return `${parts.map((part) => part.toString(16)).join(':')}::/64`;
}
