import { KEEP_UP_BOUND_MS, simulateKeepUp } from './keep-up';
import { seedsOf } from './seeded-runs';

// a quick receiver under sustained writes, over seeded runs; SIMULATION_SEED=<seed> replays
// one (seeded-runs.ts)
describe('the dispatcher, simulated: keeping up with the writes', () => {
  it(`delivers each event to a quick receiver within ${KEEP_UP_BOUND_MS} ms while events come at nine tenths of what its slots can take`, async () => {
    const failed: string[] = [];
    let longest = 0;
    for (const seed of seedsOf(20_001, 20)) {
      const report = await simulateKeepUp(seed);
      longest = Math.max(longest, report.longestDelayMs);
      if (report.violations.length > 0) {
        failed.push(
          `seed ${seed} (SIMULATION_SEED=${seed} npx jest simulated-keep-up to replay; ${report.deliveredPerSecond} of ${report.writtenPerSecond} a second delivered): ${report.violations.join('; ')}`,
        );
      }
    }
    expect(failed).toEqual([]);
    expect(longest).toBeGreaterThan(0);
  }, 300_000);
});
