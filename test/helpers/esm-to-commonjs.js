// @ts-check
// The Jest transform of node_modules: a package that ships only ES modules (NestJS 12's,
// jose, the ones under the Angular devkit's test runner) is compiled to CommonJS, which
// Jest's module system can load, where Node's own require() loads it as it is; a CommonJS
// file passes untouched. Whether a file is an ES module is what Node decides: `.mjs`, or
// `.js` under a package.json whose "type" is "module".
const { createHash } = require('node:crypto');
const { existsSync, readFileSync } = require('node:fs');
const { dirname, join } = require('node:path');
const { createTransformer } = require('@swc/jest');
const { ESM_TO_COMMONJS } = require('./swc-options');

const swc = createTransformer(ESM_TO_COMMONJS);
/** @type {Map<string, boolean>} each folder's answer, from its nearest package.json */
const moduleFolders = new Map();

function inModuleFolder(folder) {
  const known = moduleFolders.get(folder);
  if (known !== undefined) return known;
  const manifest = join(folder, 'package.json');
  const parent = dirname(folder);
  const answer = existsSync(manifest)
    ? JSON.parse(readFileSync(manifest, 'utf8')).type === 'module'
    : parent !== folder && inModuleFolder(parent);
  moduleFolders.set(folder, answer);
  return answer;
}

/** @param {string} filename */
function isEsModule(filename) {
  if (filename.endsWith('.mjs')) return true;
  if (filename.endsWith('.cjs')) return false;
  return inModuleFolder(dirname(filename));
}

/** @type {import('@jest/transform').SyncTransformer} */
module.exports = {
  canInstrument: false,
  process(source, filename, options) {
    return isEsModule(filename)
      ? swc.process(source, filename, options)
      : { code: source };
  },
  getCacheKey(source, filename, options) {
    return isEsModule(filename)
      ? swc.getCacheKey(source, filename, options)
      : createHash('sha1').update('commonjs\0').update(source).digest('hex');
  },
};
