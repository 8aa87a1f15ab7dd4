import {
  accessSync,
  chmodSync,
  constants,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  statfsSync,
  statSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { StartupError } from '../common/errors/startup-error';
import type Database from 'better-sqlite3';
import type { DataSourceOptions } from 'typeorm';
import type { PortableDataSourceOptions } from './portable-data-source';
import type {
  DatabaseConfig,
  PostgresConfig,
  SqliteConfig,
} from '../config/database.config';

/** src under jest and the TypeORM CLI, dist in the built service. */
const CODE_ROOT = join(__dirname, '..', '..');

/**
 * Where the migrations of one engine are: every module keeps its own in
 * `<its folder>/migrations/<engine>/` (the shared tables' in src/platform/database), found by this
 * pattern rather than listed, and applied in the order of their timestamps.
 */
export function migrationsPattern(engine: 'sqlite' | 'postgres'): string {
  return join(CODE_ROOT, '**', 'migrations', engine, '*.{js,ts}');
}

/** The files migrationsPattern finds: every module's migrations for one engine. */
export function migrationFiles(engine: 'sqlite' | 'postgres'): string[] {
  const inFolder = new RegExp(
    `(^|/)migrations/${engine}/[^/]+(?<!\\.d)\\.(js|ts)$`,
  );
  return readdirSync(CODE_ROOT, { recursive: true, encoding: 'utf8' })
    .filter((path) => inFolder.test(path))
    .map((path) => join(CODE_ROOT, path));
}

function sqliteOptions(
  config: SqliteConfig,
  exactIntegers: boolean,
): DataSourceOptions {
  return {
    type: 'better-sqlite3',
    database: config.sqlitePath,
    migrations: [migrationsPattern('sqlite')],
    migrationsRun: true,
    synchronize: false,
    enableWAL: true,
    prepareDatabase: (db: Database.Database) => {
      // ids are int64: read every integer as a bigint, never through a JS number
      db.defaultSafeIntegers(exactIntegers);
      // with WAL, NORMAL survives a process crash (docs/decisions.md, "Durability"); FULL
      // also a power loss
      db.pragma(`synchronous = ${config.synchronous.toUpperCase()}`);
      // TypeORM rebuilds a SQLite table to change it (create, copy, drop, rename); SQLite's
      // checking rename would refuse while a trigger or view elsewhere names the dropped
      // table (the event triggers, event_consumers). Names are resolved when they run.
      db.pragma('legacy_alter_table = ON');
    },
  };
}

function postgresOptions(config: PostgresConfig): PortableDataSourceOptions {
  return {
    type: 'postgres',
    contention: { timeoutMs: config.busyTimeoutMs, limit: config.queueLimit },
    preparedStatements: config.preparedStatements,
    url: config.url,
    migrations: [migrationsPattern('postgres')],
    migrationsRun: true,
    // each in its own transaction, for the service and the TypeORM CLI alike: one that builds
    // an index CONCURRENTLY runs outside any, which the CLI's default (one for all) refuses
    migrationsTransactionMode: 'each',
    synchronize: false,
    poolSize: config.poolSize,
    connectTimeoutMS: config.connectTimeoutMs,
    extra: {
      statement_timeout: config.statementTimeoutMs,
      query_timeout: config.queryTimeoutMs,
      // a dead server must not hold requests until the OS gives up on the socket
      keepAlive: true,
      // a statement goes out without waiting for the answer to the one before it: a
      // transaction's BEGIN and first statement take one round trip (transaction-runner.ts)
      pipeline: true,
    },
  };
}

/**
 * Options shared by the service, its command-line tool and the TypeORM CLI (ormconfig.ts).
 * Entities are not listed here: each module registers its own with `TypeOrmModule.forFeature`
 * (autoLoadEntities), and ormconfig.ts finds them all, by file name, for the TypeORM CLI.
 *
 * `exactIntegers: false` is for the TypeORM CLI only, which reads no data: TypeORM's SQLite
 * schema reader compares PRAGMA results with numbers (`notnull === 0`), so with bigints it
 * sees every column as NOT NULL and proposes to rebuild every table.
 */
export function createDataSourceOptions(
  config: DatabaseConfig,
  { exactIntegers = true }: { exactIntegers?: boolean } = {},
): PortableDataSourceOptions {
  return config.engine === 'sqlite'
    ? sqliteOptions(config, exactIntegers)
    : postgresOptions(config);
}

/**
 * The SQLite file and its folder: created readable by the service's user only when missing.
 * SQLite gives its -wal and -shm files the database file's permissions. An existing database
 * file (or -wal, -shm) open to others is tightened when the service's user owns it: it is the
 * service's own data. An existing folder is never changed, whatever its mode: it may be
 * anybody's (`/tmp`, a home folder), and its mode theirs to choose; one open to others is
 * reported, once, with the risk. The messages are returned for the caller to log.
 */
export function ensureDatabaseFolder(config: DatabaseConfig): string[] {
  if (config.engine !== 'sqlite' || config.sqlitePath === ':memory:') return [];
  refuseWhatIsNoStorage(config.sqlitePath);
  try {
    return ensureWritableFile(config.sqlitePath);
  } catch (error) {
    const path = resolve(config.sqlitePath);
    throw new StartupError(
      `cannot open the SQLite database ${path} for writing (${(error as Error).message}): make ${dirname(path)} a folder this user can write, or set DATABASE_URL=sqlite:<path> to another place`,
      { cause: error },
    );
  }
}

/** statfs's magic numbers of the kernel's own filesystems, which hold no files of anyone's. */
const KERNEL_FILESYSTEMS = new Map([
  [0x9fa0, '/proc'],
  [0x62656572, '/sys'],
  [0x64626720, 'debugfs'],
  [0x63677270, 'the cgroup filesystem'],
  [0x27e0eb, 'the cgroup filesystem'],
]);

/**
 * Before anything is opened or its mode changed: the database must be a regular file (or not
 * exist yet) on a filesystem that stores files. A device (`/dev/null`), a named pipe (whose
 * open would wait for a reader forever) or a file of /proc or /sys is refused in one line: as
 * root, tightening /dev/null's mode to 600 would break every other program on the machine.
 */
function refuseWhatIsNoStorage(given: string): void {
  const path = resolve(given);
  const fix = 'set DATABASE_URL=sqlite:<path> to a file of its own';
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (!existsSync(file)) continue;
    const stat = statSync(file);
    if (stat.isFile()) continue;
    const kind = stat.isDirectory()
      ? 'a folder'
      : stat.isCharacterDevice() || stat.isBlockDevice()
        ? 'a device'
        : stat.isFIFO()
          ? 'a named pipe'
          : 'a socket';
    throw new StartupError(
      `the SQLite database ${path} cannot be ${file}, which is ${kind}, not a file: ${fix}`,
    );
  }
  const folder = nearestExisting(dirname(path));
  const kernel = KERNEL_FILESYSTEMS.get(statfsSync(folder).type);
  if (kernel !== undefined) {
    throw new StartupError(
      `the SQLite database ${path} would be on ${kernel}, the kernel's own filesystem, which stores no files: ${fix}`,
    );
  }
}

/** `folder`, or the nearest of its parents that exists. */
function nearestExisting(folder: string): string {
  return existsSync(folder) || dirname(folder) === folder
    ? folder
    : nearestExisting(dirname(folder));
}

function ensureWritableFile(path: string): string[] {
  const folder = dirname(path);
  const notes: string[] = [];
  if (existsSync(folder)) {
    notes.push(...sharedFolder(folder));
  } else {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) {
    if (existsSync(file)) notes.push(...tightened(file, 0o600));
  }
  closeSync(openSync(path, 'a', 0o600));
  // SQLite writes its -wal and -shm files beside the database
  accessSync(folder, constants.W_OK);
  return notes;
}

/** What an existing folder open to others means for the database in it; it is left as it is. */
function sharedFolder(folder: string): string[] {
  const mode = statSync(folder).mode & 0o7777;
  if ((mode & 0o077) === 0) return [];
  const writable = (mode & 0o022) !== 0;
  return [
    `the SQLite database's folder ${resolve(folder)} is mode ${mode.toString(8)}, open to other users${writable ? ', who may create files in it' : ''}: it is left as it is (it may not be the service's own), and the database and its -wal and -shm files are kept mode 600; a folder of the service's own (DATABASE_URL=sqlite:data/plant-store.sqlite) keeps others from ${writable ? 'replacing or removing them' : 'listing them'}`,
  ];
}

/** Makes a file no more open than `mode` when the service's user owns it; says what it did. */
function tightened(path: string, mode: number): string[] {
  const stat = statSync(path);
  const was = stat.mode & 0o777;
  const tight = was & mode;
  if (tight === was) return [];
  if (stat.uid !== process.getuid?.()) {
    return [
      `${path} is mode ${was.toString(8)}, open to other users, and the service does not own it to tighten it; make it ${mode.toString(8)}`,
    ];
  }
  chmodSync(path, tight);
  return [
    `${path} was mode ${was.toString(8)}, open to other users; made it ${tight.toString(8)}`,
  ];
}
