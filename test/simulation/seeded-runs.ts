import { simulate, type RunReport } from './scenario';

/**
 * Runs the seeds `first` to `first + count - 1` through the simulation (scenario.ts) and
 * checks every invariant of each; SIMULATION_SEED=<seed> runs that one alone instead, the way
 * a failure says to replay it. SIMULATION_SCHEDULES=<n> runs the first n of the file's seeds:
 * CI's runs on the Node lines other than the primary one, where the question is whether the
 * runtime runs the simulation as the primary line does, not the schedules themselves
 * (docs/testing.md, "CI").
 */
export function describeSeededRuns(first: number, count: number): void {
  describe('the dispatcher, simulated', () => {
    itOverSeeds({
      what: 'keeps every invariant',
      seeds: seedsOf(first, count),
      run: simulate,
      replay: 'simulated-dispatch',
      summary: {
        title:
          'crashed, froze, paused and sent in numbers: the runs did what they are for',
        check: (reports: RunReport[]) => {
          const total = (key: 'crashes' | 'freezes' | 'pauses' | 'requests') =>
            reports.reduce((sum, report) => sum + report[key], 0);
          // a replay of one seed may have none
          const many = reports.length >= 100;
          expect(total('crashes')).toBeGreaterThan(
            many ? reports.length / 2 : -1,
          );
          expect(total('freezes')).toBeGreaterThan(
            many ? reports.length / 2 : -1,
          );
          expect(total('pauses')).toBeGreaterThan(
            many ? reports.length / 4 : -1,
          );
          expect(total('requests')).toBeGreaterThan(
            many ? reports.length * 100 : -1,
          );
        },
      },
    });
  });
}

/**
 * Seeded runs one test takes: a few seconds of work on a quiet machine, so that jest's limit
 * (SEEDED_TEST_TIMEOUT_MS), a wall clock, stays far off however busy the machine is.
 */
export const SEEDS_PER_TEST = 20;

/**
 * The longest one test of SEEDS_PER_TEST runs may take: some 30 times what the slowest of them
 * (the fairness runs) takes on a quiet machine. It only catches a run that never ends.
 */
export const SEEDED_TEST_TIMEOUT_MS = 120_000;

/**
 * `run` over `seeds`, SEEDS_PER_TEST to a test, each test failing with the seeds whose runs
 * broke an invariant and how to replay one; then `summary`, over every report, once all have
 * run (jest runs a file's tests in order): deterministic work over simulated time, split so
 * that no test's wall-clock limit grows with the number of runs.
 */
export function itOverSeeds<Report extends { violations: string[] }>({
  what,
  seeds,
  run,
  replay,
  summary,
}: {
  what: string;
  seeds: readonly number[];
  run: (seed: number) => Promise<Report>;
  /** The spec file's name, as jest's pattern to replay a seed. */
  replay: string;
  summary?: { title: string; check: (reports: Report[]) => void };
}): void {
  const reports: Report[] = [];
  for (let index = 0; index < seeds.length; index += SEEDS_PER_TEST) {
    const chunk = seeds.slice(index, index + SEEDS_PER_TEST);
    it(
      `${what}: seeds ${chunk[0]} to ${chunk[chunk.length - 1]}`,
      async () => {
        const failed: string[] = [];
        for (const seed of chunk) {
          const report = await run(seed);
          reports.push(report);
          if (report.violations.length > 0) {
            failed.push(
              `seed ${seed} (SIMULATION_SEED=${seed} npx jest ${replay} to replay): ${report.violations.slice(0, 5).join('; ')}`,
            );
          }
        }
        expect(failed).toEqual([]);
      },
      SEEDED_TEST_TIMEOUT_MS,
    );
  }
  if (summary) {
    it(summary.title, () => {
      expect(reports.length).toBe(seeds.length);
      summary.check(reports);
    });
  }
}

/**
 * The seeds a file of simulated runs goes through: `first` to `first + count - 1`, the first
 * SIMULATION_SCHEDULES of them (all, when it has fewer), or SIMULATION_SEED alone (a replay).
 */
export function seedsOf(first: number, count: number): number[] {
  return process.env.SIMULATION_SEED
    ? [Number(process.env.SIMULATION_SEED)]
    : Array.from(
        { length: schedulesOf(count, process.env.SIMULATION_SCHEDULES) },
        (_, index) => first + index,
      );
}

/**
 * How many of a file's `count` seeds to run: all of them, or SIMULATION_SCHEDULES of them (all,
 * when the file has fewer).
 */
function schedulesOf(count: number, setting: string | undefined): number {
  if (setting === undefined) return count;
  const schedules = Number(setting);
  if (!Number.isInteger(schedules) || schedules < 1) {
    throw new Error(
      `SIMULATION_SCHEDULES must be a positive integer, got ${JSON.stringify(setting)}`,
    );
  }
  return Math.min(schedules, count);
}
