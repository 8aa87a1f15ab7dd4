// @ts-check
'use strict';
const { join, normalize, relative } = require('@angular-devkit/core');

/** Where modules are written: the product, beside the platform they build on (docs/layout.md). */
const MODULES_ROOT = normalize('src/modules');

/**
 * The folder a command names (`inventory`, `catalogue/garden-beds`, or the same under
 * `modules/`), as a path under src/modules; undefined for one that leaves it.
 *
 * @param {string} folder
 */
function moduleFolder(folder) {
  const path = normalize(folder).replace(/^modules(\/|$)/, '');
  if (path.startsWith('..') || path.startsWith('/')) return undefined;
  return path === '' ? MODULES_ROOT : join(MODULES_ROOT, path);
}

/**
 * The relative import path from a folder under src to the platform's folder, the start of
 * every import a generated file makes of it.
 *
 * @param {string} folder
 */
function toPlatform(folder) {
  return relative(normalize(`/${folder}`), normalize('/src/platform'));
}

module.exports = { MODULES_ROOT, moduleFolder, toPlatform };
