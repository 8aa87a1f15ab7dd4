// @ts-check
'use strict';
const { spawnSync } = require('node:child_process');
const {
  readdirSync,
  readFileSync,
  rmdirSync,
  rmSync,
  writeFileSync,
} = require('node:fs');
const { dirname, join } = require('node:path');
const { SchematicsException } = require('@angular-devkit/schematics');

/** Written by openapi:generate before it builds: a failed build must not leave it changed. */
const PLUGIN_METADATA = 'src/metadata.ts';

/**
 * Runs after `resource` has written its files: regenerates the committed contract
 * (openapi/service.yaml) and the typed client from the built code, with the same command a
 * hand-written module uses. If that fails, the files `resource` wrote are removed and the ones
 * it changed restored, so that a failed generation leaves the project as it was.
 *
 * @param {{ created?: string[], changed?: Record<string, string> }} options
 */
function resourceContract(options) {
  return (tree, context) => {
    const root = process.cwd();
    const metadata = readFileSync(join(root, PLUGIN_METADATA), 'utf8');
    context.logger.info('npm run openapi:generate');
    const run = spawnSync('npm', ['run', '--silent', 'openapi:generate'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (run.status === 0) return tree;
    undo(root, {
      ...options,
      changed: { ...options.changed, [PLUGIN_METADATA]: metadata },
    });
    const output = `${run.stdout}\n${run.stderr}`.trim().split('\n');
    const reason =
      output.filter((line) => /error/i.test(line))[0] ?? output.pop();
    throw new SchematicsException(
      `npm run openapi:generate failed, so nothing was generated (${reason?.trim()}); the written files are removed`,
    );
  };
}

function undo(root, { created = [], changed = {} }) {
  const folders = new Set();
  for (const path of created) {
    rmSync(join(root, path), { force: true });
    for (let folder = dirname(path); folder !== '.'; folder = dirname(folder)) {
      folders.add(folder);
    }
  }
  // deepest first, and only those left empty
  for (const folder of [...folders].sort((a, b) => b.length - a.length)) {
    try {
      if (readdirSync(join(root, folder)).length === 0)
        rmdirSync(join(root, folder));
    } catch {
      // gone already
    }
  }
  for (const [path, content] of Object.entries(changed)) {
    writeFileSync(join(root, path), content);
  }
}

module.exports = { resourceContract };
