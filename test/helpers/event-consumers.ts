import type { TestApp } from './test-app';

/**
 * Of `types`, those some consumer wants now: a webhook subscription or an event handler, as
 * the `event_consumers` view lists them (`event_types` comma-separated, NULL for every type).
 * The triggers write an event only then, so a module that reacts to `plant.added` makes every
 * create write one: a suite that counts events counts on what the app it runs consumes.
 */
export async function consumedTypes(
  testApp: TestApp,
  types: readonly string[],
): Promise<string[]> {
  const consumers = await testApp.query<{ event_types: string | null }>(
    'SELECT event_types FROM event_consumers',
  );
  return types.filter((type) =>
    consumers.some(
      ({ event_types }) =>
        event_types === null || event_types.split(',').includes(type),
    ),
  );
}
