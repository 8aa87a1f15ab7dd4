// @ts-check
// node bench/create-cost.js [--inserts 3000] [--against DIR ...]
// What a create costs the request's own statement on SQLite with 0, 10 and 100 subscriptions,
// paused or not: a database made by each build's own migrations (its CLI), its subscriptions
// added with its CLI, then plants inserted one statement at a time through better-sqlite3
// with the service's pragmas (WAL, synchronous=NORMAL), each timed. The statement carries
// whatever the build's triggers do for it (the event, and before issue 35 a delivery row per
// subscription). Builds alternate within one run, so that the machine's noise hits all alike.
'use strict';
const { execFileSync } = require('node:child_process');
const { mkdtempSync, rmSync, writeFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const { join } = require('node:path');
const Database = require('better-sqlite3');
const { ROOT, option } = require('./built-service');

function builds() {
  const roots = [['this build', ROOT]];
  process.argv.forEach((argument, index) => {
    if (argument === '--against') roots.push([process.argv[index + 1], process.argv[index + 1]]);
  });
  return roots;
}

/** A database of `root`'s schema with `subscriptions` subscriptions, paused when asked. */
function prepare(root, subscriptions, paused) {
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-create-cost-'));
  const file = join(folder, 'store.sqlite');
  writeFileSync(file, '');
  const env = {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: `sqlite:${file}`,
    WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
  };
  // the build's CLI migrates the file and makes the first subscription as it makes them all
  execFileSync(process.execPath, [join(root, 'dist', 'cli.js'), 'webhooks', 'add', '--url', 'http://127.0.0.1:9/r0'], {
    cwd: folder,
    env,
    stdio: 'ignore',
  });
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma('legacy_alter_table = ON');
  // the others as copies of it, in slots of their own
  const copy = db.prepare(
    "INSERT INTO webhook_subscriptions (id, url, secret, slot) SELECT ?, url || ?, secret, ? FROM webhook_subscriptions LIMIT 1",
  );
  const { slot: taken } = db.prepare('SELECT slot FROM webhook_subscriptions').get();
  const free = Array.from({ length: 100 }, (_, index) => index + 1).filter((slot) => slot !== Number(taken));
  for (let i = 1; i < subscriptions; i += 1) copy.run(`copy-${i}`, String(i), free[i - 1]);
  if (subscriptions === 0) db.prepare('UPDATE webhook_subscriptions SET removed_at = CURRENT_TIMESTAMP').run();
  if (paused) {
    const columns = db.prepare("SELECT name FROM pragma_table_info('webhook_subscriptions')").all().map(({ name }) => name);
    db.prepare("UPDATE webhook_subscriptions SET consecutive_failures = 5, paused_until = datetime('now', '+1 hour')").run();
    // before issue 35 a paused subscription was also owed its events, not given rows
    if (columns.includes('owed_since')) db.prepare("UPDATE webhook_subscriptions SET owed_since = datetime('now')").run();
  }
  return { db, remove: () => (db.close(), rmSync(folder, { recursive: true, force: true })) };
}

function measure(db, inserts, from) {
  const insert = db.prepare("INSERT INTO plants (id, name, tag) VALUES (?, 'Timed', 'bench')");
  const times = [];
  for (let i = 0; i < inserts; i += 1) {
    const started = process.hrtime.bigint();
    insert.run(from + i);
    times.push(Number(process.hrtime.bigint() - started) / 1000);
  }
  times.sort((a, b) => a - b);
  const mean = times.reduce((sum, t) => sum + t, 0) / times.length;
  return { mean, p99: times[Math.floor(times.length * 0.99)] };
}

function main() {
  const inserts = option('inserts', 3000);
  const cases = [
    [0, false],
    [10, false],
    [100, false],
    [100, true],
  ];
  console.log(`one plant's INSERT on SQLite, ${inserts} timed per case, in µs (mean / p99)`);
  console.log(['build'.padEnd(24), ...cases.map(([n, paused]) => `${n} ${paused ? 'paused' : 'active'}`.padStart(20))].join(''));
  const rows = new Map(builds().map(([name]) => [name, []]));
  for (const [subscriptions, paused] of cases) {
    const prepared = builds().map(([name, root]) => ({ name, ...prepare(root, subscriptions, paused) }));
    // warm-up, then rounds alternating the builds
    for (const { db } of prepared) measure(db, 200, 1);
    const totals = new Map(prepared.map(({ name }) => [name, { mean: 0, p99: 0 }]));
    for (let round = 0; round < 3; round += 1) {
      for (const { name, db } of prepared) {
        const { mean, p99 } = measure(db, inserts, 1000 + round * inserts);
        const total = totals.get(name);
        total.mean += mean / 3;
        total.p99 += p99 / 3;
      }
    }
    for (const { name, remove } of prepared) {
      const { mean, p99 } = totals.get(name);
      rows.get(name).push(`${mean.toFixed(1)} / ${p99.toFixed(0)}`.padStart(20));
      remove();
    }
  }
  for (const [name, cells] of rows) console.log([name.padEnd(24), ...cells].join(''));
}

main();
