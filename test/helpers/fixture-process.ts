import { fixtureMain } from './build-fixtures';
import { startServiceProcess, type ServiceProcess } from './service-process';

export { buildFixtures } from './build-fixtures';

export interface FixtureProcess extends ServiceProcess {
  /** A token holding every scope, the fixture's own included. */
  token: string;
}

/**
 * Starts the service with the fixture module of `test/fixtures/<name>/` (its `main.ts`, which
 * serves as `node dist/main.js` does) and waits for the token it prints once it listens;
 * `nodeArgs` go to node before the script.
 */
export async function startFixtureProcess(
  name: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
): Promise<FixtureProcess> {
  const service = await startServiceProcess(
    env,
    undefined,
    fixtureMain(name),
    nodeArgs,
  );
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

/**
 * `count` processes of the fixture `name` on one database, started one after another (the
 * first makes the schema, the fixture's tables included), and the function that stops them.
 */
export async function startFixtureProcesses(
  name: string,
  count: number,
  env: Record<string, string>,
): Promise<{ instances: FixtureProcess[]; stop: () => Promise<void> }> {
  const instances: FixtureProcess[] = [];
  const stop = async () => {
    for (const instance of instances) instance.child.kill('SIGTERM');
    await Promise.all(instances.map((instance) => instance.exited));
  };
  try {
    for (let index = 0; index < count; index += 1) {
      instances.push(await startFixtureProcess(name, env));
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { instances, stop };
}
