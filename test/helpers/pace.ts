import { availableParallelism, loadavg } from 'node:os';

/**
 * How long this machine takes for `probe` right now: the median of `runs` timings, in ms.
 * Where a duration is the promise, a test bounds it by the promise, its stated margin, and
 * a stated number of these, measured in the same test: a busy machine is slower at everything,
 * and its slowness is not the promise broken (docs/testing.md, "The inner loop").
 */
export async function paceOf(
  probe: () => Promise<unknown>,
  runs = 5,
): Promise<number> {
  const times: number[] = [];
  for (let run = 0; run < runs; run += 1) {
    const started = performance.now();
    await probe();
    times.push(performance.now() - started);
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)];
}

/**
 * How many times busier than its cores the machine was over the last minute, 1 at least: a
 * test's limit is multiplied by it (jest.config.js does the same for the default limit), so
 * that a limit catches a test that never ends, not a machine others share.
 */
export function busyFactor(): number {
  return Math.max(1, loadavg()[0] / availableParallelism());
}

/** `ms` as a test's limit, scaled by how busy the machine is (busyFactor). */
export function testLimit(ms: number): number {
  return Math.round(ms * busyFactor());
}
