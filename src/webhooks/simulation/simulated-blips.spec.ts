import { seedsOf } from './seeded-runs';
import { simulateBlip } from './blip';

// database blips under steady delivery, over seeded runs; SIMULATION_SEED=<seed> replays one
describe('the dispatcher, simulated: database blips', () => {
  it('records an answered request once the database answers again, within its claim, instead of sending it again', async () => {
    const seeds = seedsOf(20_001, 200);
    const failed: string[] = [];
    let recordedAfterBlip = 0;
    for (const seed of seeds) {
      const report = await simulateBlip(seed);
      recordedAfterBlip += report.recordedAfterBlip;
      if (report.violations.length > 0) {
        failed.push(
          `seed ${seed} (SIMULATION_SEED=${seed} npx jest simulated-blips to replay): ${report.violations.slice(0, 3).join('; ')}`,
        );
      }
    }
    expect(failed).toEqual([]);
    // the blips did hold answered requests up, and they were recorded
    expect(recordedAfterBlip).toBeGreaterThan(seeds.length / 10);
  }, 300_000);
});
