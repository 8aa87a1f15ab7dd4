// @ts-check
// TypeScript compiled outside `nest build` as `nest build` compiles it: the options of .swcrc,
// for jest (@swc/jest, jest.unit.config.js) and the fixture build (build-fixtures.js).
const { readFileSync } = require('node:fs');
const { join } = require('node:path');

/** @type {import('@swc/core').Options} .swcrc's, with the source maps inline */
const SWC_OPTIONS = {
  ...JSON.parse(readFileSync(join(__dirname, '..', '..', '.swcrc'), 'utf8')),
  $schema: undefined,
  sourceMaps: 'inline',
  swcrc: false,
};

/** @type {import('@swc/core').Options} JavaScript modules (ESM) compiled to CommonJS for jest */
const ESM_TO_COMMONJS = {
  module: { type: 'commonjs' },
  jsc: { target: 'es2022', parser: { syntax: 'ecmascript' } },
  sourceMaps: false,
  swcrc: false,
};

module.exports = { ESM_TO_COMMONJS, SWC_OPTIONS };
