import { itOverSeeds, seedsOf } from './seeded-runs';
import { simulateFairness } from './fairness';

// a quick receiver's delay beside slow, hanging, flapping and dead ones, over seeded runs;
// SIMULATION_SEED=<seed> replays one (seeded-runs.ts)
describe('the dispatcher, simulated: fair to a quick receiver', () => {
  itOverSeeds({
    what: 'delivers each event to a quick receiver within its bound (healthyDelayBound), whatever the receivers beside it do',
    seeds: seedsOf(10_001, 200),
    run: simulateFairness,
    replay: 'simulated-fairness',
    summary: {
      title:
        "served the others meanwhile, and the quick receiver's delays were real ones",
      check: (reports) => {
        expect(
          reports.reduce((sum, report) => sum + report.unhealthyRequests, 0),
        ).toBeGreaterThan(reports.length);
        expect(
          Math.max(...reports.map((report) => report.longestDelayMs)),
        ).toBeGreaterThan(0);
      },
    },
  });
});
