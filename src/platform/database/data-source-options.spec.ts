import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { StartupError } from '../common/errors/startup-error';
import { readDatabaseConfig } from '../config/database.config';
// eslint-disable-next-line @typescript-eslint/no-restricted-imports -- prepareDatabase is handed the driver's own connection
import Database from 'better-sqlite3';
import {
  createDataSourceOptions,
  ensureDatabaseFolder,
  migrationFiles,
  migrationsPattern,
} from './data-source-options';

describe('createDataSourceOptions', () => {
  it('opens SQLite in WAL, at the synchronous level asked, integers exact, renames unchecked', () => {
    const options = createDataSourceOptions(
      readDatabaseConfig({
        DATABASE_URL: 'sqlite:data/x.sqlite',
        DB_SYNCHRONOUS: 'full',
      }),
    ) as {
      type: string;
      database: string;
      enableWAL: boolean;
      migrationsRun: boolean;
      synchronize: boolean;
      migrations: string[];
      prepareDatabase: (db: Database.Database) => void;
    };
    expect(options).toMatchObject({
      type: 'better-sqlite3',
      database: 'data/x.sqlite',
      enableWAL: true,
      migrationsRun: true,
      synchronize: false,
    });
    expect(options.migrations).toEqual([migrationsPattern('sqlite')]);
    const db = new Database(':memory:');
    try {
      options.prepareDatabase(db);
      expect(db.pragma('synchronous', { simple: true })).toBe(2n);
      expect(db.pragma('legacy_alter_table', { simple: true })).toBe(1n);
      expect(db.prepare('SELECT 9223372036854775807 AS n').get()).toEqual({
        n: 9223372036854775807n,
      });
    } finally {
      db.close();
    }
    const forTheCli = createDataSourceOptions(
      readDatabaseConfig({ DATABASE_URL: 'sqlite::memory:' }),
      { exactIntegers: false },
    ) as { prepareDatabase: (db: Database.Database) => void };
    const cli = new Database(':memory:');
    try {
      forTheCli.prepareDatabase(cli);
      expect(cli.pragma('synchronous', { simple: true })).toBe(1);
    } finally {
      cli.close();
    }
  });

  it('bounds every wait on PostgreSQL: statements, queries, connections, and keeps them alive', () => {
    expect(
      createDataSourceOptions(
        readDatabaseConfig({
          DATABASE_URL: 'postgres://plants@127.0.0.1:5432/plants',
          DB_STATEMENT_TIMEOUT: '2s',
          DB_CONNECT_TIMEOUT: '3s',
        }),
      ),
    ).toMatchObject({
      type: 'postgres',
      url: 'postgres://plants@127.0.0.1:5432/plants',
      migrations: [migrationsPattern('postgres')],
      migrationsRun: true,
      synchronize: false,
      connectTimeoutMS: 3000,
      extra: { statement_timeout: 2000, query_timeout: 3000, keepAlive: true },
    });
  });

  it("gives PostgreSQL's line in front of the pool the bounds the settings name", () => {
    const options = createDataSourceOptions(
      readDatabaseConfig({
        DATABASE_URL: 'postgres://plants@127.0.0.1:5432/plants',
        DB_POOL_SIZE: '7',
        DB_BUSY_TIMEOUT: '3s',
        DB_QUEUE_LIMIT: '40',
      }),
    );
    expect(options).toMatchObject({
      type: 'postgres',
      poolSize: 7,
      contention: { timeoutMs: 3000, limit: 40 },
      preparedStatements: true,
    });
  });

  it('names PostgreSQL statements unless DB_PREPARED_STATEMENTS=false', () => {
    const options = createDataSourceOptions(
      readDatabaseConfig({
        DATABASE_URL: 'postgres://plants@127.0.0.1:5432/plants',
        DB_PREPARED_STATEMENTS: 'false',
      }),
    );
    expect(options).toMatchObject({ preparedStatements: false });
  });
});

describe('migrationsPattern', () => {
  it("finds each engine's migrations in any module's migrations/<engine>/ folder, as code", () => {
    expect(migrationsPattern('postgres')).toBe(
      join(__dirname, '..', '..', '**', 'migrations', 'postgres', '*.{js,ts}'),
    );
  });
});

describe('migrationFiles', () => {
  it("lists the files migrationsPattern finds: each module's, for one engine only", () => {
    const sqlite = migrationFiles('sqlite').map((file) =>
      relative(join(__dirname, '..', '..'), file),
    );
    expect(sqlite).toEqual(
      expect.arrayContaining([
        join(
          'platform',
          'database',
          'migrations',
          'sqlite',
          '1795654899005-Initial.ts',
        ),
        join(
          'platform',
          'events',
          'migrations',
          'sqlite',
          '1795940000000-SkippedEvents.ts',
        ),
      ]),
    );
    for (const file of sqlite) {
      expect(file).toMatch(/(^|\/)migrations\/sqlite\/[^/]+\.ts$/);
    }
    expect(migrationFiles('postgres')).not.toEqual(
      expect.arrayContaining([expect.stringContaining('/sqlite/')]),
    );
    expect(migrationFiles('postgres').length).toBeGreaterThan(10);
  });
});

describe('ensureDatabaseFolder', () => {
  let root: string;

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'plant-store-folder-'));
  });

  afterEach(() => rmSync(root, { recursive: true, force: true }));

  const sqlite = (path: string) =>
    readDatabaseConfig({ DATABASE_URL: `sqlite:${path}` });

  it('leaves an existing shared folder as it is, sticky bit and all, and says what that risks, once', () => {
    const shared = join(root, 'tmp');
    mkdirSync(shared);
    chmodSync(shared, 0o1777);
    const notes = ensureDatabaseFolder(sqlite(join(shared, 'orders.sqlite')));
    expect(statSync(shared).mode & 0o7777).toBe(0o1777);
    expect(notes).toEqual([
      `the SQLite database's folder ${shared} is mode 1777, open to other users, who may create files in it: it is left as it is (it may not be the service's own), and the database and its -wal and -shm files are kept mode 600; a folder of the service's own (DATABASE_URL=sqlite:data/plant-store.sqlite) keeps others from replacing or removing them`,
    ]);
    expect(statSync(join(shared, 'orders.sqlite')).mode & 0o777).toBe(0o600);
  });

  it('touches no file or folder for a database in memory', () => {
    const cwd = process.cwd();
    const shared = join(root, 'shared');
    mkdirSync(shared);
    chmodSync(shared, 0o777);
    process.chdir(shared);
    try {
      expect(ensureDatabaseFolder(sqlite(':memory:'))).toEqual([]);
      expect(readdirSync(shared)).toEqual([]);
    } finally {
      process.chdir(cwd);
    }
  });

  it('leaves a home-like folder readable by others as it is', () => {
    const home = join(root, 'home');
    mkdirSync(home);
    chmodSync(home, 0o755);
    expect(ensureDatabaseFolder(sqlite(join(home, 'store.sqlite')))).toEqual([
      expect.stringContaining(
        'is mode 755, open to other users: it is left as it is',
      ),
    ]);
    expect(statSync(home).mode & 0o777).toBe(0o755);
  });

  it('says nothing of a private folder, and creates a missing one private', () => {
    const own = join(root, 'own');
    mkdirSync(own, { mode: 0o700 });
    expect(ensureDatabaseFolder(sqlite(join(own, 'store.sqlite')))).toEqual([]);
    const fresh = join(root, 'fresh', 'deeper');
    expect(ensureDatabaseFolder(sqlite(join(fresh, 'store.sqlite')))).toEqual(
      [],
    );
    expect(statSync(fresh).mode & 0o777).toBe(0o700);
  });

  it('refuses a named pipe before opening it, which would wait for a reader forever', () => {
    const pipe = join(root, 'store.sqlite');
    execFileSync('mkfifo', [pipe]);
    expect(() => ensureDatabaseFolder(sqlite(pipe))).toThrow(
      new StartupError(
        `the SQLite database ${pipe} cannot be ${pipe}, which is a named pipe, not a file: set DATABASE_URL=sqlite:<path> to a file of its own`,
      ),
    );
  });

  it('refuses a device, a folder, and its -wal or -shm when they are one, changing no mode', () => {
    const file = join(root, 'store.sqlite');
    mkdirSync(`${file}-wal`);
    expect(() => ensureDatabaseFolder(sqlite(file))).toThrow(
      `the SQLite database ${file} cannot be ${file}-wal, which is a folder, not a file`,
    );
    expect(existsSync(file)).toBe(false);
    // /dev/null itself, read only: a regression here must not tighten the machine's /dev/null
    const before = statSync('/dev/null').mode;
    expect(() => ensureDatabaseFolder(sqlite('/dev/null'))).toThrow(
      'the SQLite database /dev/null cannot be /dev/null, which is a device, not a file',
    );
    expect(statSync('/dev/null').mode).toBe(before);
  });

  it.each([
    '/proc/plant-store.sqlite',
    '/proc/self/plant-store.sqlite',
    '/sys/kernel/store/plant-store.sqlite',
  ])('refuses %s, on a filesystem of the kernel', (path) => {
    expect(() => ensureDatabaseFolder(sqlite(path))).toThrow(
      new RegExp(
        `^the SQLite database ${path} would be on (/proc|/sys), the kernel's own filesystem, which stores no files`,
      ),
    );
  });

  it("tightens the database's own files when they are open to others", () => {
    const own = join(root, 'own');
    mkdirSync(own, { mode: 0o700 });
    const file = join(own, 'store.sqlite');
    writeFileSync(file, '');
    chmodSync(file, 0o644);
    expect(ensureDatabaseFolder(sqlite(file))).toEqual([
      `${file} was mode 644, open to other users; made it 600`,
    ]);
    expect(statSync(file).mode & 0o777).toBe(0o600);
  });
});
