import { fixtureMain } from './build-fixtures';
import { startServiceProcess, type ServiceProcess } from './service-process';

export { buildFixtures } from './build-fixtures';

export interface FixtureProcess extends ServiceProcess {
  /** A token holding every scope, the fixture's own included. */
  token: string;
}

/**
 * Starts the service with the fixture module of `test/fixtures/<name>/` (its `main.ts`, which
 * serves as `node dist/main.js` does) and waits for the token it prints once it listens.
 */
export async function startFixtureProcess(
  name: string,
  env: Record<string, string>,
): Promise<FixtureProcess> {
  const service = await startServiceProcess(env, undefined, fixtureMain(name));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const line = service
      .lines()
      .find((logged) => typeof logged.fixtureToken === 'string');
    if (line) return { ...service, token: line.fixtureToken as string };
    if (Date.now() > deadline || service.child.exitCode !== null) {
      service.child.kill('SIGKILL');
      throw new Error(
        `the fixture ${name} printed no token:\n${service.output()}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
