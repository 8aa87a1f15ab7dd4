// @ts-check
// The unit tests, beside the code they test: a project of jest.config.js, and the suite that
// mutation testing (stryker.config.mjs) runs on its own.
const { SWC_OPTIONS } = require('./test/helpers/swc-options');

/**
 * TypeScript compiled as `nest build` compiles it, by SWC with the options of .swcrc: no type
 * checking (npm run lint does that), so a test file starts in milliseconds, not seconds.
 */
const transform = {
  '^.+\\.ts$': ['@swc/jest', SWC_OPTIONS],
  // ESM-only packages (NestJS 12's among them), which Node's require() loads but jest's module
  // system cannot
  '/node_modules/.+\\.m?js$': require.resolve('./test/helpers/esm-to-commonjs.js'),
};

/**
 * The relative imports written with `.js` (src/metadata.ts's, as nodenext resolution wants
 * them), resolved to the TypeScript source beside them.
 */
const RELATIVE_JS_TO_SOURCE = { '^(\\.{1,2}/.*)\\.js$': '$1' };

/** Nothing is left out: `transform` passes node_modules' CommonJS files as they are. */
const transformIgnorePatterns = [];

/** @type {import('jest').Config} */
module.exports = {
  displayName: 'unit',
  testEnvironment: 'node',
  rootDir: `${__dirname}/src`,
  transform,
  transformIgnorePatterns,
  moduleFileExtensions: ['js', 'json', 'ts'],
  moduleNameMapper: RELATIVE_JS_TO_SOURCE,
  testRegex: '.*\\.spec\\.ts$',
  // the developer's settings never reach a test (test/helpers/hermetic-environment.ts)
  setupFiles: ['<rootDir>/../test/helpers/hermetic-environment.ts'],
};
