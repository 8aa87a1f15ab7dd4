/** Compiles test/fixtures/ beside the service's build (dist/, which must exist). */
export function buildFixtures(): void;
/** The main file of the fixture `name` (test/fixtures/<name>/main.ts), once built. */
export function fixtureMain(name: string): string;
