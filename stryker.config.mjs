// @ts-check
// npm run test:mutation: mutation testing of the unit tests, over every source file that has a
// spec beside it. CI fails below the break threshold.
import { existsSync, readdirSync } from 'node:fs';

/**
 * Files whose unit spec holds one part of them only, the rest being tested against real
 * databases and receivers by the e2e suites, which Stryker does not run: mutating the rest
 * would measure what the unit spec never meant to cover.
 */
const PARTLY_UNIT_TESTED = new Set([
  // the spec holds the transaction's retries within the bound; the engines, the gate, the
  // line in front of the pool and migrations are e2e
  'src/platform/database/portable-data-source.ts',
]);

const mutate = readdirSync('src', { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.spec.ts'))
  .map((file) => `src/${file.replace(/\.spec\.ts$/, '.ts')}`)
  .filter((file) => existsSync(file) && !PARTLY_UNIT_TESTED.has(file))
  .sort();

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  testRunner: 'jest',
  jest: {
    projectType: 'custom',
    configFile: 'jest.unit.config.js',
    enableFindRelatedTests: true,
  },
  checkers: ['typescript'],
  tsconfigFile: 'tsconfig.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  mutate,
  coverageAnalysis: 'perTest',
  reporters: ['clear-text', 'progress', 'html'],
  htmlReporter: { fileName: 'reports/mutation/index.html' },
  thresholds: { high: 95, low: 90, break: 90 },
  concurrency: 2,
  timeoutMS: 10_000,
  // results of unchanged mutants and tests are reused from the committed file, so that CI
  // tests only what a change touches; `npm run test:mutation -- --force` tests everything
  incremental: true,
  incrementalFile: 'stryker-incremental.json',
  tempDirName: '.stryker-tmp',
  // the e2e suites' fixture build (test/helpers/build-fixtures.js), which links to dist/:
  // unit tests need neither, and the sandbox cannot copy the link
  ignorePatterns: ['/dist-test'],
  cleanTempDir: 'always',
};
