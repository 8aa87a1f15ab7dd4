import { KEEP_UP_BOUND_MS, simulateKeepUp } from './keep-up';
import { itOverSeeds, seedsOf } from './seeded-runs';

// a quick receiver under sustained writes, over seeded runs; SIMULATION_SEED=<seed> replays
// one (seeded-runs.ts)
describe('the dispatcher, simulated: keeping up with the writes', () => {
  itOverSeeds({
    what: `delivers each event to a quick receiver within ${KEEP_UP_BOUND_MS} ms while events come at nine tenths of what its slots can take`,
    seeds: seedsOf(30_001, 20),
    run: simulateKeepUp,
    replay: 'simulated-keep-up',
    summary: {
      title: 'delivered events, with real delays',
      check: (reports) =>
        expect(
          Math.max(...reports.map((report) => report.longestDelayMs)),
        ).toBeGreaterThan(0),
    },
  });
});
