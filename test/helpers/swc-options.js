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

module.exports = { SWC_OPTIONS };
