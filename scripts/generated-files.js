// @ts-check
// The files `npm run openapi:generate` writes from the code, committed: written when they
// differ, or with `--check` compared and reported (scripts/generate-swagger-metadata.js,
// scripts/generate-contract.mjs).
const { readFileSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');

/**
 * Writes each file of `files` (path under `root` to text) whose text differs; with `check`,
 * writes nothing and reports each one out of date. Whether all were up to date (or written).
 *
 * @param {string} root
 * @param {Record<string, string>} files
 * @param {boolean} check
 */
function writeGeneratedFiles(root, files, check) {
  let upToDate = true;
  for (const [name, text] of Object.entries(files)) {
    const target = join(root, name);
    let current = '';
    try {
      current = readFileSync(target, 'utf8');
    } catch {
      // not written yet
    }
    if (current === text) continue;
    if (check) {
      console.error(`${name} is out of date: run npm run openapi:generate`);
      upToDate = false;
    } else {
      writeFileSync(target, text);
      console.log(`wrote ${name}`);
    }
  }
  return upToDate;
}

module.exports = { writeGeneratedFiles };
