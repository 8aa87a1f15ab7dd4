// @ts-check
// The built service (dist/main.js) on a fresh SQLite file in a folder of its own, listening on a
// free loopback port with a token issued by the CLI: for the scripts that load it (soak.js,
// heavy-pages.js).
'use strict';
const { spawn, execFileSync } = require('node:child_process');
const { mkdtempSync, readFileSync, rmSync, writeFileSync } = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { join } = require('node:path');

const ROOT = join(__dirname, '..');

/**
 * The service's production Node flags, as `npm run start:prod` gives them (the Dockerfile's
 * CMD is held to the same by test/deployment.e2e-spec.ts): a capped old generation and a small
 * young one, without which V8 grows the heap towards a quarter of the machine's memory.
 */
const PRODUCTION_NODE_FLAGS = JSON.parse(
  readFileSync(join(ROOT, 'package.json'), 'utf8'),
)
  .scripts['start:prod'].split(' ')
  .filter((word) => word.startsWith('--'));

/** `--name value` from the command line, or undefined. */
function textOption(name) {
  const index = process.argv.indexOf(`--${name}`);
  return index === -1 ? undefined : process.argv[index + 1];
}

/** `--name value` from the command line as a number, or the fallback. */
function option(name, fallback) {
  const text = textOption(name);
  return text === undefined ? fallback : Number(text);
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {import('node:net').AddressInfo} */ (
        server.address()
      );
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts the service with `env` on top of its defaults and resolves once `/health/live`
 * answers: its base URL, a token with the default scopes, its process, and `stop`, which ends
 * it and removes its folder. `prepare` runs after the CLI has migrated the database and before
 * the service starts, with the database's path and the environment.
 * @param {string} name
 * @param {Record<string, string>} env
 * `nodeArgs` go to node before the service's script.
 * @param {{ root?: string, node?: string, nodeArgs?: string[], prepare?: (file: string, env: Record<string, string>) => void }} [options]
 */
async function startBuiltService(
  name,
  env,
  {
    root = ROOT,
    node = process.execPath,
    nodeArgs: extraNodeArgs = [],
    prepare,
  } = {},
) {
  const folder = mkdtempSync(join(tmpdir(), `plant-store-${name}-`));
  const serviceEnv = {
    PATH: process.env.PATH ?? '',
    NODE_ENV: 'production',
    DATABASE_URL: `sqlite:${join(folder, `${name}.sqlite`)}`,
    ...env,
  };
  // an empty file, which the CLI migrates: it creates no database of its own
  writeFileSync(join(folder, `${name}.sqlite`), '', { flag: 'a' });
  // run in its own folder, so that the developer's .env (read from the working folder) stays out
  const token = execFileSync(
    node,
    [join(root, 'dist', 'cli.js'), 'tokens', 'create', '--name', name],
    {
      cwd: folder,
      env: serviceEnv,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    },
  )
    .trimEnd()
    .split('\n')
    .pop();
  prepare?.(join(folder, `${name}.sqlite`), serviceEnv);
  const port = await freePort();
  // BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof": node options for the service only
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '')
    .split(' ')
    .filter(Boolean);
  const service = spawn(
    node,
    [
      ...PRODUCTION_NODE_FLAGS,
      ...nodeArgs,
      ...extraNodeArgs,
      join(root, 'dist', 'main.js'),
    ],
    {
      cwd: folder,
      env: { ...serviceEnv, PORT: String(port), HOST: '127.0.0.1' },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  const stop = async () => {
    service.kill('SIGTERM');
    await new Promise((resolve) => service.once('exit', resolve));
    rmSync(folder, { recursive: true, force: true });
  };
  const base = `http://127.0.0.1:${port}`;
  for (let tries = 0; ; tries += 1) {
    try {
      if ((await fetch(`${base}/health/live`)).ok) break;
    } catch {
      if (tries > 300) {
        await stop();
        throw new Error('the service did not start');
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return { base, token, service, stop };
}

/**
 * A token from the built CLI of `root`, with `scopes` (the default ones when none), for the
 * database `env` names: the last line the CLI prints.
 * @param {Record<string, string>} env
 * @param {{ name: string, scopes?: string, root?: string }} options
 */
function cliToken(env, { name, scopes, root = ROOT }) {
  const args = [
    join(root, 'dist', 'cli.js'),
    'tokens',
    'create',
    '--name',
    name,
  ];
  if (scopes) args.push('--scopes', scopes);
  return (
    execFileSync(process.execPath, args, {
      env,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .trimEnd()
      .split('\n')
      .pop() ?? ''
  );
}

/** A fresh database named `name` beside the one `adminUrl` names, through psql. */
function postgresDatabase(adminUrl, name) {
  const psql = (url, sql) =>
    execFileSync('psql', [url, '-v', 'ON_ERROR_STOP=1', '-q', '-c', sql], {
      stdio: 'ignore',
    });
  psql(adminUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    run: (sql) => psql(url.toString(), sql),
    drop: () =>
      psql(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  };
}

module.exports = {
  ROOT,
  PRODUCTION_NODE_FLAGS,
  cliToken,
  freePort,
  option,
  postgresDatabase,
  startBuiltService,
  textOption,
};
