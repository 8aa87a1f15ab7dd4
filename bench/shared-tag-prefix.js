// Issue 49: GET /plants?tag=<a tag no plant has> when 200,000 plants share its first 256
// characters, on SQLite: five requests one after another, then 40 at once, and a liveness probe
// during 40 more. Prints one JSON line.
//
//   npm run build && node bench/shared-tag-prefix.js [path to the dist/main.js to measure]
const { execFileSync, spawn } = require('node:child_process');
const { mkdtempSync, rmSync } = require('node:fs');
const { createServer } = require('node:net');
const { tmpdir } = require('node:os');
const { join, resolve } = require('node:path');
const Database = require('better-sqlite3');

const PLANTS = 200_000;
const PREFIX = 'p'.repeat(256);

const mainJs = resolve(process.argv[2] ?? join(__dirname, '..', 'dist', 'main.js'));
const cliJs = join(mainJs, '..', 'cli.js');

function freePort() {
  return new Promise((done) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => done(port));
    });
  });
}

async function startService(env) {
  const child = spawn(process.execPath, [mainJs], { env, stdio: 'ignore' });
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${env.PORT}/health/ready`)).ok) return child;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('the service did not become ready');
    await new Promise((wait) => setTimeout(wait, 100));
  }
}

async function stop(child) {
  child.kill('SIGTERM');
  await new Promise((exited) => child.once('exit', exited));
}

async function main() {
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-tag-bench-'));
  const databasePath = join(folder, 'store.sqlite');
  const port = await freePort();
  const env = {
    PATH: process.env.PATH,
    DATABASE_URL: `sqlite:${databasePath}`,
    HOST: '127.0.0.1',
    PORT: String(port),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_TOKEN: '1000000',
  };
  try {
    // the schema, by the service's own migrations; then the plants, written directly
    await stop(await startService(env));
    const db = new Database(databasePath);
    const insert = db.prepare('INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)');
    db.transaction(() => {
      for (let id = 1; id <= PLANTS; id += 1) insert.run(id, 'shared', PREFIX + id);
    })();
    db.close();
    const token = execFileSync(process.execPath, [cliJs, 'tokens', 'create', '--name', 'bench'], {
      env,
      cwd: folder,
    })
      .toString()
      .trim()
      .split('\n')
      .pop();
    const child = await startService(env);
    try {
      const base = `http://127.0.0.1:${port}`;
      const url = `${base}/plants?tag=${encodeURIComponent(`${PREFIX}nomatch`)}`;
      const timed = async (path, headers = {}) => {
        const started = performance.now();
        await (await fetch(path, { headers })).text();
        return Math.round(performance.now() - started);
      };
      const list = () => timed(url, { Authorization: `Bearer ${token}` });
      const oneByOne = [];
      for (let i = 0; i < 5; i += 1) oneByOne.push(await list());
      const started = performance.now();
      const together = await Promise.all(Array.from({ length: 40 }, list));
      const togetherMs = Math.round(performance.now() - started);
      const [liveMs] = await Promise.all([
        timed(`${base}/health/live`),
        Promise.all(Array.from({ length: 40 }, list)),
      ]);
      console.log(
        JSON.stringify({
          build: mainJs,
          plantsSharingPrefix: PLANTS,
          oneByOneMs: oneByOne,
          fortyAtOnce: { totalMs: togetherMs, slowestMs: Math.max(...together) },
          livenessDuringFortyMs: liveMs,
        }),
      );
    } finally {
      await stop(child);
    }
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
