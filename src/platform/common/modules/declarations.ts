import type { DiscoveryService } from '@nestjs/core';

/**
 * Every provider value of the app that is a `kind`: how a catalogue finds, at boot, what each
 * module declared in its module file (`ScopesModule.forFeature`, `EventsModule.forFeature`).
 */
export function declarationsOf<T>(
  discovery: DiscoveryService,
  kind: abstract new (...args: never[]) => T,
): T[] {
  return discovery
    .getProviders()
    .map(({ instance }) => instance as unknown)
    .filter((instance): instance is T => instance instanceof kind);
}
