import type { TrustProxy } from '../config/setting-kinds';

/** A URL as the log may show it: its password hidden, as the database's is. */
export { withoutPassword as hidePassword } from '../config/url-without-password';

/** Whose X-Forwarded-* headers are believed, as the start line says it. */
export function describeTrustProxy(trust: TrustProxy): string {
  if (trust === false) return 'trusting no proxy';
  if (trust === true) return 'trusting any peer as a proxy';
  if (typeof trust === 'number') return `trusting ${trust} proxy hops`;
  return `trusting the proxies at ${trust.join(', ')}`;
}
