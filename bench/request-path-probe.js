// @ts-check
// Loaded into the service by bench/request-path.js (`--require`): counts which functions run,
// through the inspector, and on each SIGUSR2 takes the counts (which resets them); on every
// second one, writes the files whose functions ran since the one before to REQUEST_PATH_OUT,
// each with whether only its export getters ran: SWC's CommonJS output reads an imported
// binding (a constant, a class for `instanceof`) through a getter of the file that exports it.
'use strict';
const inspector = require('node:inspector');
const { readFileSync, writeFileSync } = require('node:fs');
const { fileURLToPath } = require('node:url');

const out = /** @type {string} */ (process.env.REQUEST_PATH_OUT);

/** @type {Map<string, [number, number][]>} where each file's export getters are */
const exportBlocks = new Map();

/**
 * Where SWC's export getters are in a built file: `_export(exports, { get name () {...} })`
 * for several exports, `Object.defineProperty(exports, "name", { get: function() {...} })` for
 * one.
 */
function exportBlocksOf(/** @type {string} */ url) {
  let blocks = exportBlocks.get(url);
  if (blocks === undefined) {
    blocks = [];
    if (url.startsWith('file:')) {
      const text = readFileSync(fileURLToPath(url), 'utf8');
      for (const opening of [
        '_export(exports, {',
        'Object.defineProperty(exports, "',
      ]) {
        for (
          let start = text.indexOf(opening);
          start >= 0;
          start = text.indexOf(opening, start + 1)
        ) {
          blocks.push([start, text.indexOf('\n});', start)]);
        }
      }
    }
    exportBlocks.set(url, blocks);
  }
  return blocks;
}

const session = new inspector.Session();
session.connect();
session.post('Profiler.enable');
session.post('Profiler.startPreciseCoverage', {
  callCount: true,
  detailed: false,
});
let marks = 0;
process.on('SIGUSR2', () => {
  session.post('Profiler.takePreciseCoverage', (error, coverage) => {
    if (error) throw error;
    marks += 1;
    if (marks % 2 === 1) {
      writeFileSync(`${out}.started`, '');
      return;
    }
    const files = coverage.result.flatMap(({ url, functions }) => {
      // a script's own top level (offset 0) keeps the count of its load
      const ran = functions.filter(
        ({ ranges: [range] }) => range.startOffset > 0 && range.count > 0,
      );
      if (ran.length === 0) return [];
      const blocks = exportBlocksOf(url);
      const onlyGetters = ran.every(({ ranges: [range] }) =>
        blocks.some(
          ([start, end]) => range.startOffset > start && range.endOffset <= end,
        ),
      );
      return [{ url, onlyGetters }];
    });
    writeFileSync(out, JSON.stringify(files));
  });
});
