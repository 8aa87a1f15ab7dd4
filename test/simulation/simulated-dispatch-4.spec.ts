import { describeSeededRuns } from './seeded-runs';

// the dispatcher over 2000 seeded schedules in all, 500 a file so that jest's workers share them
describeSeededRuns(1501, 500);
