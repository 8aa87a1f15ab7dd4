// @ts-check
// The slow suite (`npm run test:slow`, run by CI beside `npm test`): the resource generator in a
// copy of the repository, end to end. Minutes, not seconds, so kept out of the suite a
// newcomer runs first.

/** @type {import('jest').Config} */
module.exports = {
  displayName: 'slow',
  testEnvironment: 'node',
  rootDir: __dirname,
  transform: {
    '^.+\\.ts$': [
      'ts-jest',
      {
        astTransformers: {
          before: ['<rootDir>/test/swagger-plugin.transformer.js'],
        },
      },
    ],
  },
  moduleFileExtensions: ['js', 'json', 'ts'],
  testRegex: 'test/.*\\.slow-spec\\.ts$',
  modulePathIgnorePatterns: ['<rootDir>/.stryker-tmp/'],
  testTimeout: 10 * 60_000,
};
