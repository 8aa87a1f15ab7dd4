import { itOverSeeds, seedsOf } from './seeded-runs';
import { simulateBlip } from './blip';

// database blips under steady delivery, over seeded runs; SIMULATION_SEED=<seed> replays one
describe('the dispatcher, simulated: database blips', () => {
  itOverSeeds({
    what: 'records an answered request once the database answers again, within its claim, instead of sending it again',
    seeds: seedsOf(20_001, 200),
    run: simulateBlip,
    replay: 'simulated-blips',
    summary: {
      title: 'held answered requests up by the blips, and recorded them',
      check: (reports) =>
        expect(
          reports.reduce((sum, report) => sum + report.recordedAfterBlip, 0),
        ).toBeGreaterThan(reports.length / 10),
    },
  });
});
