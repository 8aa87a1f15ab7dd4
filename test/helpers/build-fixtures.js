// @ts-check
// Compiles the fixture modules of test/fixtures/ to run as processes beside the service's own
// build: their files under dist-test/test/fixtures/, and dist-test/src a link to dist/, so that
// a fixture's `../../../src/...` imports load what `node dist/main.js` runs. The e2e suite's
// global setup and the contention bench call it; `node test/helpers/build-fixtures.js` too.
const { transformFileSync } = require('@swc/core');
const {
  mkdirSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} = require('node:fs');
const { dirname, join, relative } = require('node:path');
const { SWC_OPTIONS } = require('./swc-options');

const ROOT = join(__dirname, '..', '..');
const FIXTURES_DIST = join(ROOT, 'dist-test');

/** The main file of the fixture `name` (test/fixtures/<name>/main.ts), once built. */
function fixtureMain(name) {
  return join(FIXTURES_DIST, 'test', 'fixtures', name, 'main.js');
}

/** Compiles test/fixtures/ beside the service's build (dist/, which must exist). */
function buildFixtures() {
  rmSync(FIXTURES_DIST, { recursive: true, force: true });
  const files = readdirSync(join(ROOT, 'test', 'fixtures'), {
    withFileTypes: true,
    recursive: true,
  })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
  for (const file of files) {
    const target = join(FIXTURES_DIST, relative(ROOT, file)).replace(
      /\.ts$/,
      '.js',
    );
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(
      target,
      transformFileSync(file, { ...SWC_OPTIONS, filename: file }).code,
    );
  }
  symlinkSync(join('..', 'dist'), join(FIXTURES_DIST, 'src'));
}

module.exports = { buildFixtures, fixtureMain };

if (require.main === module) buildFixtures();
