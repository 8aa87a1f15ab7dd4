// @ts-check
// Loaded into the service by bench/request-path.js (`--require`): counts which functions run,
// through the inspector, and on each SIGUSR2 takes the counts (which resets them); on every
// second one, writes the files whose functions ran since the one before to REQUEST_PATH_OUT.
'use strict';
const inspector = require('node:inspector');
const { writeFileSync } = require('node:fs');

const out = /** @type {string} */ (process.env.REQUEST_PATH_OUT);
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
    const files = coverage.result
      // a script's own top level (offset 0) keeps the count of its load
      .filter(({ functions }) =>
        functions.some(
          ({ ranges: [range] }) => range.startOffset > 0 && range.count > 0,
        ),
      )
      .map(({ url }) => url);
    writeFileSync(out, JSON.stringify(files));
  });
});
