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
  const seeds = seedsOf(first, count);
  describe('the dispatcher, simulated', () => {
    it(`keeps every invariant over the seeded schedules ${seeds[0]} to ${seeds[seeds.length - 1]}`, async () => {
      const failed: RunReport[] = [];
      const totals = { crashes: 0, freezes: 0, pauses: 0, requests: 0 };
      for (const seed of seeds) {
        const report = await simulate(seed);
        if (report.violations.length > 0) failed.push(report);
        for (const key of Object.keys(totals) as (keyof typeof totals)[]) {
          totals[key] += report[key];
        }
      }
      expect(
        failed.map(
          ({ seed, violations }) =>
            `seed ${seed} (SIMULATION_SEED=${seed} npx jest simulated-dispatch to replay): ${violations.slice(0, 5).join('; ')}`,
        ),
      ).toEqual([]);
      // the runs did what they are for: crashes, freezes, pauses and requests, in numbers (a
      // replay of one seed may have none)
      const many = seeds.length >= 100;
      expect(totals.crashes).toBeGreaterThan(many ? seeds.length / 2 : -1);
      expect(totals.freezes).toBeGreaterThan(many ? seeds.length / 2 : -1);
      expect(totals.pauses).toBeGreaterThan(many ? seeds.length / 4 : -1);
      expect(totals.requests).toBeGreaterThan(many ? seeds.length * 100 : -1);
    }, 120_000);
  });
}

/**
 * The seeds a file of simulated runs goes through: `first` to `first + count - 1`, the first
 * SIMULATION_SCHEDULES of them, or SIMULATION_SEED alone (a replay).
 */
export function seedsOf(first: number, count: number): number[] {
  return process.env.SIMULATION_SEED
    ? [Number(process.env.SIMULATION_SEED)]
    : Array.from(
        { length: schedulesOf(count, process.env.SIMULATION_SCHEDULES) },
        (_, index) => first + index,
      );
}

/** How many of a file's `count` seeds to run: all of them, or SIMULATION_SCHEDULES of them. */
function schedulesOf(count: number, setting: string | undefined): number {
  if (setting === undefined) return count;
  const schedules = Number(setting);
  if (!Number.isInteger(schedules) || schedules < 1 || schedules > count) {
    throw new Error(
      `SIMULATION_SCHEDULES must be an integer from 1 to ${count}, got ${JSON.stringify(setting)}`,
    );
  }
  return schedules;
}
