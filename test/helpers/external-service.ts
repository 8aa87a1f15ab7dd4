import { spawnSync } from 'node:child_process';

/**
 * Why a service cannot be used, or undefined when it answers: `probe` is a Node script that
 * gets `url` as its argument and exits 0 when the service answers. Synchronous, for describe.
 */
export function probeService(probe: string, url: string): string | undefined {
  const result = spawnSync(process.execPath, ['-e', probe, url], {
    encoding: 'utf8',
    timeout: 10_000,
  });
  return result.status === 0 ? undefined : result.stderr.trim() || 'no answer';
}

/**
 * `describe` when the service answers; otherwise the suite is skipped with the reason, except
 * on CI (CI=true), where a skipped suite is a failure.
 */
export function describeWhenReachable(
  service: {
    name: string;
    url: string;
    variable: string;
    problem: string | undefined;
  },
  name: string,
  body: () => void,
): void {
  if (service.problem === undefined) {
    describe(name, body);
    return;
  }
  describeWhenAvailable(
    `${service.name} at ${new URL(service.url).host} is not reachable (${service.problem})`,
    `set ${service.variable} to run it`,
    name,
    body,
  );
}

/**
 * `describe` when `problem` is undefined; otherwise the suite is skipped, saying why and what
 * would run it (`remedy`), except on CI (CI=true), where a skipped suite is a failure.
 */
export function describeWhenAvailable(
  problem: string | undefined,
  remedy: string,
  name: string,
  body: () => void,
): void {
  if (problem === undefined) {
    describe(name, body);
    return;
  }
  if (process.env.CI) throw new Error(`CI must run "${name}", but ${problem}`);
  console.warn(`Skipping "${name}": ${problem}; ${remedy}`);
  describe.skip(name, body);
}
