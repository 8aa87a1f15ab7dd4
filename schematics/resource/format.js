// @ts-check
'use strict';
const { execFileSync } = require('node:child_process');
const { join } = require('node:path');

/**
 * The sources formatted with the project's Prettier settings, `{ path: source }` in and out.
 * Prettier runs in a process of its own: it loads its plugins with dynamic imports, which a
 * test runner's sandbox (jest's VM contexts) does not allow.
 *
 * @param {string} root
 * @param {Record<string, string>} sources
 * @returns {Record<string, string>}
 */
function formatSources(root, sources) {
  return JSON.parse(
    execFileSync(process.execPath, [__filename], {
      cwd: root,
      input: JSON.stringify({ root, sources }),
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    }),
  );
}

async function main() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  const { root, sources } = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  const prettier = require(require.resolve('prettier', { paths: [root] }));
  const formatted = {};
  for (const [path, source] of Object.entries(sources)) {
    const filepath = join(root, path);
    const config = (await prettier.resolveConfig(filepath)) ?? {};
    formatted[path] = await prettier.format(source, { ...config, filepath });
  }
  process.stdout.write(JSON.stringify(formatted));
}

if (require.main === module) {
  main().catch((error) => {
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  });
}

module.exports = { formatSources };
