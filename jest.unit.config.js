// @ts-check
// The unit tests, beside the code they test: a project of jest.config.js, and the suite that
// mutation testing (stryker.config.mjs) runs on its own.

/** @type {import('jest').Config} */
module.exports = {
  displayName: 'unit',
  testEnvironment: 'node',
  rootDir: `${__dirname}/src`,
  transform: {
    '^.+\\.ts$': [
      'ts-jest',
      { astTransformers: { before: ['<rootDir>/../test/swagger-plugin.transformer.js'] } },
    ],
  },
  moduleFileExtensions: ['js', 'json', 'ts'],
  testRegex: '.*\\.spec\\.ts$',
  // the developer's settings never reach a test (test/helpers/hermetic-environment.ts)
  setupFiles: ['<rootDir>/../test/helpers/hermetic-environment.ts'],
};
