// @ts-check
// Projects: unit tests beside the code; the delivery simulations; the e2e suite on SQLite; and
// the same e2e suite again on PostgreSQL (TEST_ENGINE=postgres), whenever a server answers at
// TEST_DATABASE_URL (default 127.0.0.1:5432). Without one the PostgreSQL project is left out, saying why; on CI that is
// an error, so a CI run cannot pass without it.
const { spawnSync } = require('node:child_process');
const unit = require('./jest.unit.config');

const e2e = {
  testEnvironment: 'node',
  rootDir: __dirname,
  // SWC, as the unit tests (jest.unit.config.js)
  transform: unit.transform,
  transformIgnorePatterns: unit.transformIgnorePatterns,
  moduleNameMapper: unit.moduleNameMapper,
  moduleFileExtensions: ['js', 'json', 'ts'],
  testRegex: 'test/.*\\.e2e-spec\\.ts$',
  // a mutation run's sandbox copies the repository there
  modulePathIgnorePatterns: ['<rootDir>/.stryker-tmp/'],
  globalSetup: '<rootDir>/test/helpers/build-dist.ts',
  // the developer's settings never reach a test (test/helpers/hermetic-environment.ts)
  setupFiles: ['<rootDir>/test/helpers/hermetic-environment.ts'],
};

/** Suites about one engine, the built binaries or the machine, which run once, on SQLite. */
const ENGINE_INDEPENDENT = [
  'cli',
  'client-package',
  'conventions',
  'dependency-partitions',
  'deployment',
  'faults',
  'full-disk',
  // the identity provider's tokens: one engine shows them (test/oidc.e2e-spec.ts)
  'oidc',
  'openapi',
  'postgres',
  'process',
  'process-cleanup',
  'rate-limit-shared',
  'test-ports',
  'tracing',
  'troubleshooting',
  'readme',
  'typed-client-generated',
  'webhooks-process',
].map((name) => `<rootDir>/test/${name}\\.e2e-spec\\.ts$`);

function postgresProblem() {
  const url =
    process.env.TEST_DATABASE_URL ??
    'postgres://postgres@127.0.0.1:5432/postgres';
  const probe = spawnSync(
    process.execPath,
    [
      '-e',
      `const { Client } = require('pg');
       const client = new Client({ connectionString: process.argv[1], connectionTimeoutMillis: 2000 });
       client.connect().then(() => client.end()).then(() => process.exit(0),
         (error) => { console.error(error.message); process.exit(1); });`,
      url,
    ],
    { encoding: 'utf8', timeout: 10_000 },
  );
  return probe.status === 0
    ? undefined
    : `${new URL(url).host}: ${probe.stderr.trim() || 'no answer'}`;
}

/**
 * The simulations of test/simulation/: the delivery engine's own code over thousands of seeded
 * schedules on simulated time, as unit tests are run (no build, no database).
 */
const simulation = {
  ...unit,
  displayName: 'simulation',
  rootDir: __dirname,
  testRegex: 'test/simulation/.*\\.spec\\.ts$',
  setupFiles: ['<rootDir>/test/helpers/hermetic-environment.ts'],
};

const projects = [unit, simulation, { displayName: 'e2e', ...e2e }];

const problem = postgresProblem();
if (problem === undefined || process.env.CI) {
  projects.push({
    displayName: 'e2e-postgres',
    ...e2e,
    testPathIgnorePatterns: ['/node_modules/', ...ENGINE_INDEPENDENT],
    setupFiles: [...e2e.setupFiles, '<rootDir>/test/helpers/use-postgres.js'],
  });
} else {
  process.stderr.write(
    `\nThe e2e suite on PostgreSQL is SKIPPED: PostgreSQL does not answer at ${problem}. ` +
      'Set TEST_DATABASE_URL to run it.\n\n',
  );
}

/** @type {import('jest').Config} */
// two workers at least: most files wait on processes, sockets and timers, not on the CPU, so
// even two cores run two files at once (docs/testing.md)
const maxWorkers = Math.max(2, require('node:os').availableParallelism() - 1);

/**
 * A test's limit: a minute on a machine no busier than its cores, and as many times more as
 * the machine is busier (its load over the last minute, per core) when the run starts. The
 * limit only catches a test that never ends; on a machine others share, everything is slower,
 * which is no failure of the test (docs/testing.md).
 */
const busy =
  require('node:os').loadavg()[0] / require('node:os').availableParallelism();
const testTimeout = Math.round(60_000 * Math.max(1, busy));

module.exports = { testTimeout, maxWorkers, projects };
