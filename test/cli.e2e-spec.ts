import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TOKEN_CACHE_TTL_MS } from '../src/platform/auth/tokens.service';
import { ROOT, runCliProcess } from './helpers/service-process';
import { makeTempFolder, startTestApp, type TestApp } from './helpers/test-app';

describe('the tokens command-line tool (node dist/cli.js tokens)', () => {
  let folder: ReturnType<typeof makeTempFolder>;
  let env: Record<string, string>;
  let testApp: TestApp;
  let nextId = 1;

  beforeAll(async () => {
    folder = makeTempFolder();
    const databaseFile = join(folder.path, 'store.sqlite');
    env = { DATABASE_URL: `sqlite:${databaseFile}` };
    testApp = await startTestApp({ databaseFile });
  });

  afterAll(async () => {
    await testApp.close();
    folder.remove();
  });

  const cli = (...args: string[]) => runCliProcess(args, env);
  const createPlant = (token: string) =>
    testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .send({ id: nextId++, name: 'From the CLI' });

  it('creates a token with the plant scopes, printed alone on the last line', async () => {
    const created = await cli('tokens', 'create', '--name', 'deploy bot');
    expect(created.status).toBe(0);
    expect(created.lastLine).toMatch(/^pst_[A-Za-z0-9_-]{43}$/);
    expect(created.stdout).toContain(
      'with scopes plants:read,plants:write, expiring ',
    );
    await createPlant(created.lastLine).expect(200);
    // webhooks:manage only when named
    await testApp
      .http()
      .get('/webhooks/subscriptions')
      .set('Authorization', `Bearer ${created.lastLine}`)
      .expect(403);
  });

  it('grants webhooks:manage when --scopes names it', async () => {
    const created = await cli(
      'tokens',
      'create',
      '--name',
      'operator',
      '--scopes',
      'webhooks:manage',
    );
    expect(created.stdout).toContain('with scopes webhooks:manage, expiring ');
    await testApp
      .http()
      .get('/webhooks/subscriptions')
      .set('Authorization', `Bearer ${created.lastLine}`)
      .expect(200);
    await createPlant(created.lastLine).expect(403);
  });

  it('lists tokens with id, name, scopes, created, expires and last used, never the token', async () => {
    const created = await cli(
      'tokens',
      'create',
      '--name',
      'listed',
      '--expires-in',
      '30d',
    );
    await createPlant(created.lastLine).expect(200);
    const listed = await cli('tokens', 'list');
    expect(listed.status).toBe(0);
    const [header, ...rows] = listed.stdout.trimEnd().split('\n');
    expect(header.split(/\s{2,}/)).toEqual([
      'ID',
      'NAME',
      'SCOPES',
      'CREATED',
      'EXPIRES',
      'LAST USED',
      'STATUS',
    ]);
    const row = rows.find((line) => line.includes('listed'));
    expect(row).toMatch(
      /^[0-9a-f-]{36}\s+listed\s+plants:read,plants:write\s+\d{4}-\d\d-\d\dT\S+Z\s+\d{4}-\d\d-\d\dT\S+Z\s+\d{4}-\d\d-\d\dT\S+Z\s+active$/,
    );
    expect(listed.stdout).not.toContain(created.lastLine.slice(4));
  });

  it('revokes a token, which the running service refuses within a second', async () => {
    const created = await cli('tokens', 'create', '--name', 'leaked');
    await createPlant(created.lastLine).expect(200);
    const id = /created token ([0-9a-f-]{36})/.exec(created.stdout)?.[1] ?? '';
    const revoked = await cli('tokens', 'revoke', id);
    const revokedAt = Date.now();
    expect(revoked.status).toBe(0);
    expect(revoked.stdout).toContain(`revoked token ${id}`);
    // The service caches token lookups for TOKEN_CACHE_TTL_MS (1 s), from a lookup made before
    // the revocation: a request that starts later than that must be refused, however slow.
    const refusedFrom = revokedAt + TOKEN_CACHE_TTL_MS + 20;
    for (;;) {
      const startedAt = Date.now();
      const { status } = await createPlant(created.lastLine);
      if (status === 401) break;
      expect(status).toBe(200);
      expect(startedAt).toBeLessThan(refusedFrom);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect((await cli('tokens', 'list')).stdout).toMatch(
      new RegExp(`^${id}.*revoked`, 'm'),
    );
  });

  it('fails when revoking a token that does not exist', async () => {
    const result = await cli(
      'tokens',
      'revoke',
      '00000000-0000-4000-8000-000000000000',
    );
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(
      'no active token with id 00000000-0000-4000-8000-000000000000',
    );
  });

  // The deadline is read from the CLI's own output, so a slow machine cannot make the token
  // expire before the first request: acceptance before expiry is timed in the second test.
  const expiryPrinted = (stdout: string) =>
    Date.parse(/, expiring (\S+)\n/.exec(stdout)?.[1] ?? '');

  it('gives a token made without --expires-in 90 days, never for ever', async () => {
    const before = Date.now();
    const created = await cli('tokens', 'create', '--name', 'defaulted');
    const after = Date.now();
    expect(created.status).toBe(0);
    const days = 90 * 86_400_000;
    const expiresAt = expiryPrinted(created.stdout);
    expect(expiresAt).toBeGreaterThanOrEqual(before + days);
    expect(expiresAt).toBeLessThanOrEqual(after + days);
    const [stored] = await testApp.query<{ expires_at: unknown }>(
      "SELECT expires_at FROM api_tokens WHERE name = 'defaulted'",
    );
    expect(stored.expires_at).not.toBeNull();
    await createPlant(created.lastLine).expect(200);
  });

  it('issues a token that stops being honoured once its lifetime has passed', async () => {
    const before = Date.now();
    const created = await cli(
      'tokens',
      'create',
      '--name',
      'short-lived',
      '--expires-in',
      '1s',
    );
    const after = Date.now();
    expect(created.status).toBe(0);
    const expiresAt = expiryPrinted(created.stdout);
    expect(expiresAt).toBeGreaterThanOrEqual(before + 1000);
    expect(expiresAt).toBeLessThanOrEqual(after + 1000);
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, expiresAt - Date.now()) + 50),
    );
    await createPlant(created.lastLine).expect(401);
  });

  it('issues a token that is honoured until its lifetime has passed', async () => {
    const before = Date.now();
    const created = await cli(
      'tokens',
      'create',
      '--name',
      'hour-long',
      '--expires-in',
      '1h',
    );
    expect(created.status).toBe(0);
    expect(expiryPrinted(created.stdout)).toBeGreaterThanOrEqual(
      before + 3_600_000,
    );
    await createPlant(created.lastLine).expect(200);
  });

  it('refuses a lifetime beyond ten years before anything is written', async () => {
    const before = (await testApp.query('SELECT id FROM api_tokens')).length;
    for (const lifetime of ['3651d', '2920000d', '99999999999999d']) {
      const result = await cli(
        'tokens',
        'create',
        '--name',
        'forever',
        '--expires-in',
        lifetime,
      );
      expect([lifetime, result.status]).toEqual([lifetime, 1]);
      expect(result.stderr).toMatch(
        /a token lives at most 3650d \(ten years\)/,
      );
    }
    expect(await testApp.query('SELECT id FROM api_tokens')).toHaveLength(
      before,
    );
    const longest = await cli(
      'tokens',
      'create',
      '--name',
      'decade',
      '--expires-in',
      '3650d',
    );
    expect(longest.status).toBe(0);
    await createPlant(longest.lastLine).expect(200);
  });

  it('lists tokens despite a row whose expiry is not a time, and honours no such token', async () => {
    const created = await cli('tokens', 'create', '--name', 'damaged');
    const [{ id }] = await testApp.query<{ id: string }>(
      "SELECT id FROM api_tokens WHERE name = 'damaged'",
    );
    const db = new Database(join(folder.path, 'store.sqlite'));
    db.prepare(
      "UPDATE api_tokens SET expires_at = '0NaN-01-01 00:00:00.000' WHERE id = ?",
    ).run(id);
    db.close();
    await new Promise((resolve) => setTimeout(resolve, TOKEN_CACHE_TTL_MS));

    const listed = await cli('tokens', 'list');
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+damaged.*unreadable`));
    await createPlant(created.lastLine).expect(401);
  });

  it('issues a read-only token, which gets 403 on POST /plants', async () => {
    const created = await cli(
      'tokens',
      'create',
      '--name',
      'reader',
      '--scopes',
      'plants:read',
    );
    expect(created.status).toBe(0);
    await createPlant(created.lastLine).expect(403);
  });

  it.each([
    [['tokens', 'create'], /required option '--name <name>' not specified/],
    [
      ['tokens', 'create', '--name', 'x', '--scopes', 'plants:admin'],
      /unknown scope plants:admin/,
    ],
    [
      ['tokens', 'create', '--name', 'x', '--expires-in', 'forever'],
      /expected a positive duration/,
    ],
    [['tokens', 'revoke', '7'], /expected an id as the list command shows it/],
  ])('rejects %j with a message and a non-zero exit', async (args, message) => {
    const result = await cli(...args);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(message);
  });

  it('names the database it works on, as an absolute path', async () => {
    const result = await runCliProcess(
      ['tokens', 'list'],
      { DATABASE_URL: 'sqlite:store.sqlite' },
      folder.path,
    );
    expect(result.status).toBe(0);
    expect(result.stderr).toBe(
      `database: SQLite ${join(folder.path, 'store.sqlite')}\n`,
    );
  });

  it('reads DATABASE_URL from .env in its working directory', async () => {
    const elsewhere = makeTempFolder();
    try {
      writeFileSync(
        join(elsewhere.path, '.env'),
        `DATABASE_URL=${env.DATABASE_URL}\n`,
      );
      const result = await runCliProcess(
        ['tokens', 'list'],
        {},
        elsewhere.path,
      );
      expect(result.status).toBe(0);
      expect(result.stderr).toBe(
        `database: SQLite ${join(folder.path, 'store.sqlite')}\n`,
      );
    } finally {
      elsewhere.remove();
    }
  });

  it('refuses to create a database, saying where it looked and how to point it at the right one', async () => {
    const elsewhere = makeTempFolder();
    try {
      const result = await runCliProcess(
        ['tokens', 'create', '--name', 'lost'],
        {},
        elsewhere.path,
      );
      expect(result.status).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(
        `error: there is no database at ${join(elsewhere.path, 'data', 'plant-store.sqlite')}, and the CLI does not create one: run it from the folder the service runs in, or set DATABASE_URL=sqlite:<absolute path of the service's database> (the service creates it when it first starts)\n`,
      );
      expect(readdirSync(elsewhere.path)).toEqual([]);
    } finally {
      elsewhere.remove();
    }
  });

  it('says "run npm run build first" when run through npm before a build', () => {
    const unbuilt = makeTempFolder();
    try {
      mkdirSync(join(unbuilt.path, 'scripts'));
      copyFileSync(
        join(ROOT, 'scripts', 'cli.js'),
        join(unbuilt.path, 'scripts', 'cli.js'),
      );
      const result = spawnSync(
        process.execPath,
        [join(unbuilt.path, 'scripts', 'cli.js'), 'tokens', 'list'],
        { encoding: 'utf8', timeout: 30_000 },
      );
      expect(result.status).toBe(1);
      expect(result.stdout).toBe('');
      expect(result.stderr).toBe(
        'error: the plant store is not built yet: run npm run build first\n',
      );
    } finally {
      unbuilt.remove();
    }
  });

  it('runs as npm run tokens -- create --name me', () => {
    const result = spawnSync(
      'npm',
      ['run', '--silent', 'tokens', '--', 'create', '--name', 'me'],
      {
        cwd: ROOT,
        env: { ...process.env, ...env },
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    expect(result.status).toBe(0);
    expect(result.stdout.trimEnd().split('\n').pop()).toMatch(/^pst_/);
  });
});

describe('the events command-line tool (node dist/cli.js events)', () => {
  let folder: ReturnType<typeof makeTempFolder>;
  let env: Record<string, string>;
  let testApp: TestApp;

  beforeAll(async () => {
    folder = makeTempFolder();
    const databaseFile = join(folder.path, 'store.sqlite');
    env = { DATABASE_URL: `sqlite:${databaseFile}` };
    testApp = await startTestApp({ databaseFile });
    const db = new Database(databaseFile);
    // what a handler leaves when it gives up on two events
    const skip = db.prepare(
      `INSERT INTO event_handler_skips (handler, seq, event_id, type, payload, created_at, attempts, last_error, skipped_at, retry_requested_at)
       VALUES (?, ?, ?, 'plant.deleted', '{"id":7}', '2026-12-01 10:00:00.000', 7, ?, '2026-12-01 10:01:03.000', NULL)`,
    );
    skip.run('care.plant-deleted', 41, `evt_${'a'.repeat(32)}`, 'no plan 7');
    skip.run(
      'care.plant-deleted',
      9223372036854775807n,
      `evt_${'b'.repeat(32)}`,
      'x'.repeat(300),
    );
    db.close();
  });

  afterAll(async () => {
    await testApp.close();
    folder.remove();
  });

  const cli = (...args: string[]) => runCliProcess(args, env);
  const retryAsked = () =>
    testApp.query<{ seq: bigint; retry_requested_at: unknown }>(
      'SELECT seq, retry_requested_at FROM event_handler_skips ORDER BY seq',
    );

  it('lists the skipped events, their place exact and the last error cut to a line', async () => {
    const listed = await cli('events', 'skipped');
    expect(listed.status).toBe(0);
    const [header, ...rows] = listed.stdout.trimEnd().split('\n');
    expect(header.split(/\s{2,}/)).toEqual([
      'HANDLER',
      'PLACE',
      'EVENT',
      'TYPE',
      'ATTEMPTS',
      'SKIPPED',
      'RETRY',
      'LAST ERROR',
    ]);
    expect(rows).toHaveLength(2);
    expect(rows[0].split(/\s{2,}/)).toEqual([
      'care.plant-deleted',
      '41',
      `evt_${'a'.repeat(32)}`,
      'plant.deleted',
      '7',
      '2026-12-01T10:01:03.000Z',
      '-',
      'no plan 7',
    ]);
    expect(rows[1]).toContain('9223372036854775807');
    expect(rows[1]).toContain(`${'x'.repeat(120)}`);
    expect(rows[1]).not.toContain(`${'x'.repeat(121)}`);
  });

  it('asks for a retry of one, then of every one, and refuses a handler with none', async () => {
    const one = await cli('events', 'retry', 'care.plant-deleted', '41');
    expect(one.status).toBe(0);
    expect(one.stdout).toBe(
      'asked care.plant-deleted to try 1 skipped event again: events skipped shows any that fail again\n',
    );
    expect(
      (await retryAsked()).map((row) => row.retry_requested_at !== null),
    ).toEqual([true, false]);
    const every = await cli('events', 'retry', 'care.plant-deleted');
    expect(every.stdout).toContain('to try 2 skipped events again');
    expect(
      (await retryAsked()).every((row) => row.retry_requested_at !== null),
    ).toBe(true);
    const none = await cli('events', 'retry', 'care.nothing');
    expect(none.status).toBe(1);
    expect(none.stderr).toContain('handler care.nothing has skipped no event');
    const bad = await cli('events', 'retry', 'care.plant-deleted', '-3');
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain("expected an event's place in the log");
  });

  it('dismisses one, which is then gone, and says so of one that is not there', async () => {
    const dismissed = await cli(
      'events',
      'dismiss',
      'care.plant-deleted',
      '41',
    );
    expect(dismissed.status).toBe(0);
    expect(dismissed.stdout).toBe(
      'dismissed the event at 41 that care.plant-deleted skipped\n',
    );
    expect((await retryAsked()).map((row) => String(row.seq))).toEqual([
      '9223372036854775807',
    ]);
    const again = await cli('events', 'dismiss', 'care.plant-deleted', '41');
    expect(again.status).toBe(1);
    expect(again.stderr).toContain(
      'handler care.plant-deleted has skipped no event at 41',
    );
  });
});
