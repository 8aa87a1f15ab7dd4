#!/usr/bin/env node
// `npm run tokens` and `npm run webhooks`: the operator's tool from dist/, or, before a build,
// a word saying so rather than Node's "Cannot find module".
const { existsSync } = require('node:fs');
const { join } = require('node:path');

const cli = join(__dirname, '..', 'dist', 'cli.js');
if (!existsSync(cli)) {
  console.error('error: the plant store is not built yet: run npm run build first');
  process.exit(1);
}
require(cli)
  .runCli(process.argv.slice(2))
  .then((code) => {
    process.exitCode = code;
  });
