// @ts-check
// The slow suite (`npm run test:slow`, run by CI beside `npm test`): the resource generator in a
// copy of the repository and its schematics, the migrations' drift check on both engines, the
// benchmark's smoke run, three instances on one database, the previous release beside this
// build through a rolling update, the dispatcher's poll at a million deliveries and the docs
// page in a real browser.
// Minutes, not seconds, so kept out of the suite a newcomer runs first (docs/testing.md).

/** @type {import('jest').Config} */
module.exports = {
  displayName: 'slow',
  testEnvironment: 'node',
  rootDir: __dirname,
  // SWC, as the unit tests (jest.unit.config.js)
  transform: require('./jest.unit.config').transform,
  transformIgnorePatterns: require('./jest.unit.config').transformIgnorePatterns,
  moduleNameMapper: require('./jest.unit.config').moduleNameMapper,
  moduleFileExtensions: ['js', 'json', 'ts'],
  testRegex: 'test/.*\\.slow-spec\\.ts$',
  modulePathIgnorePatterns: ['<rootDir>/.stryker-tmp/'],
  globalSetup: '<rootDir>/test/helpers/build-dist.ts',
  testTimeout: 10 * 60_000,
  maxWorkers: 2,
  // the developer's settings never reach a test (test/helpers/hermetic-environment.ts)
  setupFiles: ['<rootDir>/test/helpers/hermetic-environment.ts'],
};
