import { lookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import { firstUnprintable } from '../../platform/common/text';

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

/** A URL's hostname as an address or name: an IPv6 literal comes in brackets. */
function hostOf(url: URL): string {
  const { hostname } = url;
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
}

/** Why a webhook URL may never be delivered to, or undefined when it may be tried. */
export function describeUrlProblem(
  url: string,
  allowPrivateNetworks: boolean,
): string | undefined {
  const unprintable = firstUnprintable(url);
  if (unprintable) {
    // stored as it is, it would reach an operator's terminal through `webhooks list`
    return `url must not contain control or invisible characters (a line break, an escape, a bidirectional override), got ${unprintable.codePoint} at character ${unprintable.at + 1}`;
  }
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
  // `localhost.` is localhost: a trailing dot only says the name is fully qualified
  const host = hostOf(parsed).replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) {
    return `${host} is a loopback name; set WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true to allow it`;
  }
  if (isIP(host) && !isPublicAddress(host)) {
    return `${host} is not a public address; set WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true to allow it`;
  }
  return undefined;
}

/** How long a subscription waits for its host's name to resolve before it is taken anyway. */
const SUBSCRIBE_LOOKUP_TIMEOUT_MS = 2000;

/**
 * Why a webhook URL's host name is one that may not be called: it resolves, now, to an address
 * that is not public (`ip6-localhost`, the machine's own name, an internal name). A name that
 * does not resolve yet is taken: every connection checks again (publicOnlyLookup).
 */
export async function describeResolvedProblem(
  url: string,
): Promise<string | undefined> {
  const host = hostOf(new URL(url));
  if (isIP(host)) return undefined;
  const addresses = await Promise.race([
    lookupAll(host),
    new Promise<LookupAddress[]>((resolve) =>
      setTimeout(() => resolve([]), SUBSCRIBE_LOOKUP_TIMEOUT_MS).unref(),
    ),
  ]);
  return addresses.some(({ address }) => !isPublicAddress(address))
    ? `${host} resolves to an address that is not public; set WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true to allow it`
    : undefined;
}

function lookupAll(host: string): Promise<LookupAddress[]> {
  return new Promise((resolve) =>
    lookup(host, { all: true }, (error, addresses) =>
      resolve(error ? [] : addresses),
    ),
  );
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
      // which address, the subscriber must not learn: lastError is theirs to read
      const problem: NodeJS.ErrnoException = new Error(
        `${hostname} resolves to an address that is not public`,
      );
      problem.code = 'ENOTPUBLIC';
      return callback(problem, []);
    }
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
}
