import { lookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * IPv4-compatible IPv6 (::/96, deprecated by RFC 4291): it embeds an IPv4 address, loopback
 * and private ones included, that some stacks still reach.
 */
const IPV4_COMPATIBLE = new BlockList();
IPV4_COMPATIBLE.addSubnet('::', 96, 'ipv6');

/**
 * Public unicast only: loopback, private, link-local (cloud metadata at 169.254.169.254),
 * unique-local, carrier-grade NAT, multicast and reserved ranges are not the internet.
 */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  // ipaddr.js reads `::a.b.c.d` as IPv4-mapped and calls `::a:b` unicast; Node's own parser
  // places both in ::/96
  if (isIP(address) === 6 && IPV4_COMPATIBLE.check(address, 'ipv6')) {
    return false;
  }
  return ipaddr.process(address).range() === 'unicast';
}

/** Why a webhook URL may never be delivered to, or undefined when it may be tried. */
export function describeUrlProblem(
  url: string,
  allowPrivateNetworks: boolean,
): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return `${JSON.stringify(url)} is not an absolute URL`;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    return `webhook URLs must use http or https, got ${parsed.protocol}`;
  }
  if (parsed.username || parsed.password) {
    return 'webhook URLs must not carry credentials';
  }
  if (allowPrivateNetworks) return undefined;
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  if (host === 'localhost' || host.endsWith('.localhost')) {
    return `${host} is a loopback name; set WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true to allow it`;
  }
  if (isIP(host) && !isPublicAddress(host)) {
    return `${host} is not a public address; set WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true to allow it`;
  }
  return undefined;
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/**
 * dns.lookup for outgoing webhook connections that refuses names resolving to a non-public
 * address. The socket connects to the address checked here, so a name cannot be re-pointed
 * between the check and the connection.
 */
export function publicOnlyLookup(
  hostname: string,
  options: LookupOptions,
  callback: LookupCallback,
): void {
  lookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const refused = addresses.find(({ address }) => !isPublicAddress(address));
    if (refused) {
      const problem: NodeJS.ErrnoException = new Error(
        `${hostname} resolves to ${refused.address}, which is not a public address`,
      );
      problem.code = 'ENOTPUBLIC';
      return callback(problem, []);
    }
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
}
