import { createHash, randomInt, randomUUID } from 'node:crypto';
import {
  existsSync,
  readFileSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Client } from 'pg';
import { readDatabaseConfig } from '../src/platform/config/database.config';
import { createDataSourceOptions } from '../src/platform/database/data-source-options';
import { PortableDataSource } from '../src/platform/database/portable-data-source';
import { createTestDatabase, describeWithPostgres } from './helpers/postgres';
import {
  runCliProcess,
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';
import { freePort } from './helpers/ports';
import {
  databaseForProcesses,
  databaseReader,
  ENGINE,
  makeTempFolder,
  type Engine,
} from './helpers/test-app';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver';

const SERVICE_SETTINGS = {
  LOG_LEVEL: 'warn',
  RATE_LIMIT_PER_TOKEN: '1000000000',
  RATE_LIMIT_PER_ADDRESS: '1000000000',
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOKS_RETRY_BASE: '50ms',
  WEBHOOKS_RETRY_MAX_DELAY: '100ms',
  WEBHOOKS_POLL_INTERVAL: '50ms',
  WEBHOOKS_TIMEOUT: '1s',
  // a receiver that refused is tried again at once once it is back
  WEBHOOKS_PAUSE: '100ms',
};

/** The `name` column of a statement's rows, read through `opened`, which it closes. */
async function namesIn(
  opened: ReturnType<typeof databaseReader>,
  sql: string,
): Promise<string[]> {
  try {
    return (await opened.query<{ name: string }>(sql, [])).map(
      ({ name }) => name,
    );
  } finally {
    await opened.close();
  }
}

/** A database that does not exist yet (SQLite) or is empty (PostgreSQL), and how to see it is. */
async function emptyTarget(
  engine: Engine,
  folder: string,
): Promise<{
  url: string;
  reader: () => ReturnType<typeof databaseReader>;
  tables: () => Promise<string[]>;
  drop: () => Promise<void>;
}> {
  if (engine === 'sqlite') {
    const file = join(folder, `target-${randomUUID()}.sqlite`);
    const reader = () => databaseReader('sqlite', file);
    return {
      url: `sqlite:${file}`,
      reader,
      tables: async () =>
        existsSync(file)
          ? namesIn(
              reader(),
              "SELECT name FROM sqlite_master WHERE type = 'table'",
            )
          : [],
      drop: () => Promise.resolve(),
    };
  }
  const created = await createTestDatabase();
  const reader = () => databaseReader('postgres', created.url);
  return {
    url: created.url,
    reader,
    tables: () =>
      namesIn(
        reader(),
        'SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema()',
      ),
    drop: created.drop,
  };
}

/**
 * A store for processes, that the CLI may set up before the service first starts: the CLI
 * migrates a database but never makes one, so a SQLite store starts as an empty file.
 */
async function storeForCli() {
  const store = await databaseForProcesses({ writable: true });
  if (store.url.startsWith('sqlite:')) {
    writeFileSync(store.url.slice('sqlite:'.length), '');
  }
  return store;
}

/** An archive's lines, edited and written back whole: its manifest's SHA-256 made right again. */
function rewriteArchive(
  from: string,
  to: string,
  edit: (lines: string[]) => string[],
): void {
  const lines = gunzipSync(readFileSync(from)).toString().trimEnd().split('\n');
  const manifest = JSON.parse(lines.pop()!) as { sha256: string };
  const edited = edit(lines);
  manifest.sha256 = createHash('sha256')
    .update(edited.map((line) => `${line}\n`).join(''))
    .digest('hex');
  writeFileSync(
    to,
    gzipSync(`${[...edited, JSON.stringify(manifest)].join('\n')}\n`),
  );
}

/** Each table's row count and checksum, as `verify` reads an archive's manifest. */
function manifestOf(file: string): Record<string, unknown> {
  const lines = gunzipSync(readFileSync(file)).toString().trimEnd().split('\n');
  return (JSON.parse(lines.at(-1)!) as { manifest: { tables: object } })
    .manifest.tables as Record<string, unknown>;
}

const post = (
  service: ServiceProcess,
  token: string,
  body: object,
  key?: string,
) =>
  fetch(`${service.baseUrl}/plants`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      ...(key && { 'Idempotency-Key': key }),
    },
    body: JSON.stringify(body),
  });

/** Starts the service on `url`, creates each plant through it, and stops it. */
async function createThrough(
  url: string,
  token: string,
  ...plants: object[]
): Promise<void> {
  const service = await startServiceProcess({
    DATABASE_URL: url,
    ...SERVICE_SETTINGS,
  });
  try {
    for (const plant of plants) {
      expect((await post(service, token, plant)).status).toBe(200);
    }
  } finally {
    service.child.kill('SIGTERM');
    await service.exited;
  }
}

// docs/operations.md, "Backups and restores": backup, restore and verify, over real processes,
// each store of the jest project's engine
describe(`backup, restore and verify (${ENGINE})`, () => {
  let folder: ReturnType<typeof makeTempFolder>;
  let source: Awaited<ReturnType<typeof databaseForProcesses>>;
  const cli = (url: string, ...args: string[]) =>
    runCliProcess(args, { DATABASE_URL: url, ...SERVICE_SETTINGS });

  beforeEach(async () => {
    folder = makeTempFolder();
    source = await storeForCli();
  });

  afterEach(async () => {
    await source.drop();
    folder.remove();
  });

  const tokenOn = async (url: string, name = 'backups') =>
    (await cli(url, 'tokens', 'create', '--name', name)).lastLine;

  it('takes a snapshot under concurrent writes: every create acknowledged before it began, nothing half-written', async () => {
    const receiverPort = await freePort();
    // a receiver that is down: every event is owed, its deliveries pending
    expect(
      (
        await cli(
          source.url,
          'webhooks',
          'add',
          '--url',
          `http://127.0.0.1:${receiverPort}/hooks`,
        )
      ).status,
    ).toBe(0);
    const token = await tokenOn(source.url);
    const service = await startServiceProcess({
      DATABASE_URL: source.url,
      ...SERVICE_SETTINGS,
    });
    const archive = join(folder.path, 'store.archive');
    const answered: { id: number; at: number; status: number }[] = [];
    let writing = true;
    const writer = async () => {
      while (writing) {
        const id = randomInt(1, 2 ** 47);
        const response = await post(
          service,
          token,
          { id, name: 'Fern' },
          randomUUID(),
        );
        answered.push({ id, at: Date.now(), status: response.status });
      }
    };
    const writers = Array.from({ length: 8 }, writer);
    const acknowledged = () =>
      answered.filter(({ status }) => status === 200).length;
    try {
      // creates acknowledged before the backup, however busy the machine
      await eventually(acknowledged, (count) => count > 10);
      const backupStarted = Date.now();
      const backup = await cli(source.url, 'backup', archive);
      expect(backup.stderr).not.toContain('error');
      expect(backup.status).toBe(0);
      expect(backup.lastLine).toMatch(
        /^backed up \d+ tables and [\d,]+ rows to .* in [\d.]+ s; the snapshot is of /,
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      writing = false;
      await Promise.all(writers);

      const before = answered.filter(
        ({ at, status }) => status === 200 && at < backupStarted,
      );
      expect(answered.filter(({ status }) => status !== 200)).toEqual([]);
      // held by its owner alone: it holds webhook secrets
      expect(statSync(archive).mode & 0o777).toBe(0o600);
      // every table of the migrated schema, and nothing else: a module's own tables need no code
      const schemaTables = (
        ENGINE === 'sqlite'
          ? await source.reader.query<{ name: string }>(
              "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
              [],
            )
          : await source.reader.query<{ name: string }>(
              "SELECT table_name AS name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'",
              [],
            )
      )
        .map(({ name }) => name)
        // the database's own: its migrations, and the moves of the store away from it
        .filter((name) => !['migrations', 'store_moves'].includes(name));
      expect(Object.keys(manifestOf(archive)).sort()).toEqual(
        schemaTables.sort(),
      );
      expect(schemaTables.length).toBeGreaterThanOrEqual(10);

      const target = await emptyTarget(ENGINE, folder.path);
      try {
        const restored = await cli(target.url, 'restore', archive);
        expect(restored.stderr).not.toContain('error:');
        expect(restored.status).toBe(0);
        const reader = target.reader();
        try {
          const plants = new Set(
            (
              await reader.query<{ id: bigint }>('SELECT id FROM plants', [])
            ).map(({ id }) => Number(id)),
          );
          for (const { id } of before) expect(plants).toContain(id);
          // each create wrote its plant, its key and its event in one transaction: the
          // snapshot holds all three of a create, or none
          const keyed = (
            await reader.query<{ body: string }>(
              'SELECT body FROM idempotency_keys WHERE status = 200',
              [],
            )
          ).map(({ body }) => (JSON.parse(body) as { id: number }).id);
          expect(new Set(keyed)).toEqual(plants);
          const published = (
            await reader.query<{ payload: string }>(
              "SELECT payload FROM events WHERE type = 'plant.added'",
              [],
            )
          ).map(({ payload }) => (JSON.parse(payload) as { id: number }).id);
          expect(published.length).toBe(plants.size);
          expect(new Set(published)).toEqual(plants);
        } finally {
          await reader.close();
        }
        const verified = await cli(target.url, 'verify', archive, '--against');
        expect(verified.lastLine).toMatch(
          /^the archive is whole, and the database holds the same rows: \d+ tables and [\d,]+ rows$/,
        );
        expect(verified.status).toBe(0);
      } finally {
        await target.drop();
      }
    } finally {
      writing = false;
      await Promise.all(writers);
      service.child.kill('SIGTERM');
      await service.exited;
    }
  });

  it('restores a store that serves on: tokens authenticate (revoked ones stay revoked), keys replay, and owed events go out under the webhook ids they had', async () => {
    // one receiver throughout, never a port given up and taken again: it refuses while the
    // source runs first, then takes what the restored store sends, then what the source does
    let phase: 'refusing' | 'target' | 'source' = 'refusing';
    const got = { target: [] as string[], source: [] as string[] };
    const receiver = await WebhookReceiver.start((request, response) => {
      if (phase === 'refusing') {
        response.writeHead(503).end();
        return;
      }
      got[phase].push(String(request.headers['webhook-id']));
      response.end();
    });
    expect(
      (await cli(source.url, 'webhooks', 'add', '--url', receiver.url)).status,
    ).toBe(0);
    const token = await tokenOn(source.url);
    const revoked = await cli(source.url, 'tokens', 'create', '--name', 'old');
    const revokedId = /created token (\S+)/.exec(revoked.stdout)![1];
    expect((await cli(source.url, 'tokens', 'revoke', revokedId)).status).toBe(
      0,
    );
    const service = await startServiceProcess({
      DATABASE_URL: source.url,
      ...SERVICE_SETTINGS,
    });
    const key = randomUUID();
    const keyedBody = '{"id":9223372036854775807,"name":"Palm"}';
    try {
      const first = await fetch(`${service.baseUrl}/plants`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${token}`,
          'Content-Type': 'application/json',
          'Idempotency-Key': key,
        },
        body: keyedBody,
      });
      expect(first.status).toBe(200);
      for (let id = 1; id <= 5; id += 1) {
        expect((await post(service, token, { id, name: 'Fern' })).status).toBe(
          200,
        );
      }
      // the receiver refuses them: deliveries are made, and owed; how many before the stop
      // depends on the dispatcher's pauses for a failing receiver, and the rest are owed too
      await eventually(
        () => source.reader.query('SELECT id FROM webhook_deliveries', []),
        (rows) => rows.length > 0,
      );
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    // events the source has not yet made deliveries of: owed all the same
    await source.reader.query(
      'INSERT INTO plants (id, name) VALUES (?, ?), (?, ?)',
      [-9_223_372_036_854_775_807n, 'Cycad', 6n, 'Moss'],
    );
    const archive = join(folder.path, 'store.archive');
    expect((await cli(source.url, 'backup', archive)).status).toBe(0);
    const events = await source.reader.query<{ id: string }>(
      'SELECT id FROM events',
      [],
    );
    expect(events).toHaveLength(8);

    const target = await emptyTarget(ENGINE, folder.path);
    try {
      expect((await cli(target.url, 'restore', archive)).status).toBe(0);
      phase = 'target';
      const restored = await startServiceProcess({
        DATABASE_URL: target.url,
        ...SERVICE_SETTINGS,
      });
      let ids: string[];
      try {
        ids = await eventually(
          () => got.target,
          (received) => received.length >= 8,
        );
        expect(new Set(ids).size).toBe(8);
        const replay = await fetch(`${restored.baseUrl}/plants`, {
          method: 'POST',
          headers: {
            Authorization: `Bearer ${token}`,
            'Content-Type': 'application/json',
            'Idempotency-Key': key,
          },
          body: keyedBody,
        });
        expect(replay.status).toBe(200);
        expect(replay.headers.get('idempotent-replayed')).toBe('true');
        expect(await replay.text()).toBe(keyedBody);
        const read = await fetch(
          `${restored.baseUrl}/plants/9223372036854775807`,
          {
            headers: { Authorization: `Bearer ${token}` },
          },
        );
        expect(read.status).toBe(200);
        const refused = await fetch(`${restored.baseUrl}/plants/1`, {
          headers: { Authorization: `Bearer ${revoked.lastLine}` },
        });
        expect(refused.status).toBe(401);
      } finally {
        restored.child.kill('SIGTERM');
        await restored.exited;
      }
      // the source, started again, sends the same owed events under the same ids: a
      // receiver that drops ids it has seen gets each event once
      phase = 'source';
      const again = await startServiceProcess({
        DATABASE_URL: source.url,
        ...SERVICE_SETTINGS,
      });
      try {
        const fromSource = await eventually(
          () => got.source,
          (received) => received.length >= 8,
        );
        expect(new Set(fromSource)).toEqual(new Set(ids));
      } finally {
        again.child.kill('SIGTERM');
        await again.exited;
      }
    } finally {
      await receiver.close().catch(() => undefined);
      await target.drop();
    }
  });

  it('restores an archive of an older schema into that schema, then migrates it up', async () => {
    const older = new PortableDataSource({
      ...createDataSourceOptions(
        readDatabaseConfig({ DATABASE_URL: source.url }),
      ),
      migrationsRun: false,
      logging: false,
    });
    await older.initialize();
    const newest = older.migrations
      .map((migration) => migration.name!)
      .sort((a, b) => Number(a.slice(-13)) - Number(b.slice(-13)))
      .at(-1)!;
    older.migrations.splice(
      older.migrations.findIndex(({ name }) => name === newest),
      1,
    );
    await older.runMigrations();
    await older.query(
      "INSERT INTO plants (id, name) VALUES (9007199254740993, 'Agave')",
    );
    await older.destroy();
    const archive = join(folder.path, 'older.archive');
    expect((await cli(source.url, 'backup', archive)).status).toBe(0);
    const target = await emptyTarget(ENGINE, folder.path);
    try {
      const restored = await cli(target.url, 'restore', archive);
      expect(restored.lastLine).toContain(`; then migrated it up by ${newest}`);
      expect(restored.status).toBe(0);
      const reader = target.reader();
      try {
        expect(
          await reader.query<{ name: string }>(
            'SELECT name FROM migrations ORDER BY id DESC LIMIT 1',
            [],
          ),
        ).toEqual([{ name: newest }]);
        expect(
          await reader.query<{ id: bigint }>('SELECT id FROM plants', []),
        ).toEqual([{ id: 9007199254740993n }]);
      } finally {
        await reader.close();
      }
    } finally {
      await target.drop();
    }
  });

  describe('refuses, naming the problem, and leaves the target as it was', () => {
    let archive = '';
    let target: Awaited<ReturnType<typeof emptyTarget>>;
    const kept = makeTempFolder();

    afterAll(() => kept.remove());

    // one archive for every refusal, of a store with a plant
    const makeArchive = async (): Promise<string> => {
      await createThrough(source.url, await tokenOn(source.url), {
        id: 7,
        name: 'Ivy',
      });
      const file = join(kept.path, 'store.archive');
      expect((await cli(source.url, 'backup', file)).status).toBe(0);
      return file;
    };

    beforeEach(async () => {
      archive ||= await makeArchive();
      target = await emptyTarget(ENGINE, folder.path);
    });

    afterEach(() => target.drop());

    const refusedInto = async (file: string, message: RegExp) => {
      const refused = await cli(target.url, 'restore', file);
      expect(refused.stderr).toMatch(message);
      expect(refused.status).toBe(1);
      expect(await target.tables()).toEqual([]);
    };

    it('an archive that is corrupt', async () => {
      const damaged = join(folder.path, 'damaged.archive');
      const bytes = readFileSync(archive);
      bytes[Math.floor(bytes.length / 2)] ^= 0xff;
      writeFileSync(damaged, bytes);
      await refusedInto(
        damaged,
        /error: the archive .* (is damaged|cannot be read)/,
      );
      expect((await cli(target.url, 'verify', damaged)).status).toBe(1);
    });

    it('an archive that is cut short', async () => {
      const cut = join(folder.path, 'cut.archive');
      writeFileSync(cut, readFileSync(archive));
      truncateSync(cut, Math.floor(readFileSync(archive).length * 0.8));
      await refusedInto(
        cut,
        /error: the archive .* (cut short|cannot be read)/,
      );
    });

    it('an archive whose rows were altered after it was written', async () => {
      const altered = join(folder.path, 'altered.archive');
      rewriteArchive(archive, altered, (lines) =>
        lines.map((line) => line.replace('"Ivy"', '"Oak"')),
      );
      await refusedInto(
        altered,
        /error: the archive .* is damaged at line \d+: table plants holds 1 rows with checksum/,
      );
    });

    it('an archive of a schema newer than this build knows', async () => {
      const newer = join(folder.path, 'newer.archive');
      rewriteArchive(archive, newer, ([header, ...rest]) => {
        const parsed = JSON.parse(header) as {
          migrations: string[];
          schema: number;
        };
        parsed.migrations.push('FromTheFuture1999999999999');
        parsed.schema = 1_999_999_999_999;
        return [JSON.stringify(parsed), ...rest];
      });
      await refusedInto(
        newer,
        /error: the archive's schema \(version 1999999999999, FromTheFuture1999999999999\) is newer than this build knows/,
      );
    });

    it('a target that holds data, unless --replace', async () => {
      expect((await cli(target.url, 'restore', archive)).status).toBe(0);
      await createThrough(target.url, await tokenOn(target.url, 'target'), {
        id: 8,
        name: 'Yew',
      });
      const held = join(folder.path, 'held.archive');
      expect((await cli(target.url, 'backup', held)).status).toBe(0);
      const refused = await cli(target.url, 'restore', archive);
      expect(refused.stderr).toMatch(
        /error: the target database holds data \(in api_tokens, plants\): restore into an empty database, or add --replace/,
      );
      expect(refused.status).toBe(1);
      expect((await cli(target.url, 'verify', held, '--against')).status).toBe(
        0,
      );
      // --replace: the archive's rows, and none of the target's
      expect(
        (await cli(target.url, 'restore', archive, '--replace')).status,
      ).toBe(0);
      expect(
        (await cli(target.url, 'verify', archive, '--against')).status,
      ).toBe(0);
      const differs = await cli(target.url, 'verify', held, '--against');
      expect(differs.stdout).toContain(
        'plants: the archive 2 rows, the database 1 rows',
      );
      expect(differs.stderr).toContain(
        'error: the database differs from the archive in api_tokens, plants',
      );
      expect(differs.status).toBe(1);
    });
  });
});

// Either direction: the same rows by checksum after SQLite to PostgreSQL to SQLite
if (ENGINE === 'sqlite') {
  describeWithPostgres('backup and restore across engines', () => {
    it('SQLite to PostgreSQL to SQLite gives the same store, int64 ids exact at both ends', async () => {
      const folder = makeTempFolder();
      const source = await storeForCli();
      const postgres = await createTestDatabase();
      try {
        const env = { DATABASE_URL: source.url, ...SERVICE_SETTINGS };
        const token = (
          await runCliProcess(['tokens', 'create', '--name', 'move'], env)
        ).lastLine;
        expect(
          (
            await runCliProcess(
              ['webhooks', 'add', '--url', 'http://127.0.0.1:9/hooks'],
              env,
            )
          ).status,
        ).toBe(0);
        const service = await startServiceProcess(env);
        try {
          for (const id of [
            9_223_372_036_854_775_807n,
            -9_223_372_036_854_775_807n,
            1n,
          ]) {
            const response = await fetch(`${service.baseUrl}/plants`, {
              method: 'POST',
              headers: {
                Authorization: `Bearer ${token}`,
                'Content-Type': 'application/json',
                'Idempotency-Key': randomUUID(),
              },
              body: `{"id":${id},"name":"Ficus","tag":"ünïcödé ✓"}`,
            });
            expect(response.status).toBe(200);
          }
        } finally {
          service.child.kill('SIGTERM');
          await service.exited;
        }
        const run = (url: string, ...args: string[]) =>
          runCliProcess(args, { DATABASE_URL: url });
        const first = join(folder.path, 'from-sqlite.archive');
        const second = join(folder.path, 'from-postgres.archive');
        const third = join(folder.path, 'back-in-sqlite.archive');
        const back = `sqlite:${join(folder.path, 'back.sqlite')}`;
        expect((await run(source.url, 'backup', first)).status).toBe(0);
        expect((await run(postgres.url, 'restore', first)).status).toBe(0);
        expect((await run(postgres.url, 'backup', second)).status).toBe(0);
        expect((await run(back, 'restore', second)).status).toBe(0);
        expect((await run(back, 'backup', third)).status).toBe(0);
        expect(manifestOf(second)).toEqual(manifestOf(first));
        expect(manifestOf(third)).toEqual(manifestOf(first));
        expect(
          (await run(postgres.url, 'verify', first, '--against')).status,
        ).toBe(0);

        const client = new Client({ connectionString: postgres.url });
        await client.connect();
        try {
          const { rows } = await client.query<{ id: string; tag: string }>(
            'SELECT id::text, tag FROM plants ORDER BY id',
          );
          expect(rows).toEqual([
            { id: '-9223372036854775807', tag: 'ünïcödé ✓' },
            { id: '1', tag: 'ünïcödé ✓' },
            { id: '9223372036854775807', tag: 'ünïcödé ✓' },
          ]);
        } finally {
          await client.end();
        }
      } finally {
        await postgres.drop();
        await source.drop();
        folder.remove();
      }
    });
  });
}
