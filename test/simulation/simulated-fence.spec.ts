import { FENCE_QUIET_MS, simulateFence } from './fence';
import { itOverSeeds, seedsOf } from './seeded-runs';

// a store's fence going up under delivery, as a move puts it, over seeded runs;
// SIMULATION_SEED=<seed> replays one (seeded-runs.ts)
describe('the dispatcher, simulated: a move fencing the store', () => {
  itOverSeeds({
    what: `starts no request while the store is fenced, and holds no claim ${FENCE_QUIET_MS} ms after the fence went up`,
    seeds: seedsOf(40_001, 60),
    run: simulateFence,
    replay: 'simulated-fence',
    summary: {
      title: 'gave back attempts claimed ahead when the fence went up',
      check: (reports) =>
        expect(
          reports.filter((report) => report.givenBack > 0).length,
        ).toBeGreaterThan(reports.length / 2),
    },
  });
});
