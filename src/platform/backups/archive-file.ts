import { createHash, type Hash } from 'node:crypto';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { rename, rm, open } from 'node:fs/promises';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { createGunzip, createGzip, type Gzip } from 'node:zlib';
import {
  ARCHIVE_FORMAT,
  ARCHIVE_VERSION,
  ArchiveError,
  TableChecksum,
  type ArchiveHeader,
  type ArchiveManifest,
  type ArchiveTable,
  type CanonicalRow,
  type TableEnd,
  type TableSummary,
} from './archive-format';

/**
 * Writes an archive as it is read from the database, so that memory does not grow with the
 * store: into `<file>.partial`, readable by its owner only (it holds webhook secrets and token
 * hashes), renamed to `file` once whole and on disk. An archive that was cut short never
 * carries the name of a whole one.
 */
export class ArchiveWriter {
  private readonly hash: Hash = createHash('sha256');
  private readonly tables: Record<string, TableSummary> = {};
  private table?: { name: string; checksum: TableChecksum };

  private constructor(
    private readonly file: string,
    private readonly partial: string,
    private readonly gzip: Gzip,
    private readonly out: WriteStream,
  ) {}

  static async create(file: string, header: ArchiveHeader) {
    const partial = `${file}.partial`;
    // `wx`: a partial file another backup is writing is never taken over
    const out = createWriteStream(partial, { flags: 'wx', mode: 0o600 });
    await once(out, 'open');
    // level 1: most of what gzip saves, at a fraction of its time
    const gzip = createGzip({ level: 1 });
    gzip.pipe(out);
    const writer = new ArchiveWriter(file, partial, gzip, out);
    await writer.line(JSON.stringify(header));
    return writer;
  }

  private async line(text: string): Promise<void> {
    const line = `${text}\n`;
    this.hash.update(line);
    if (!this.gzip.write(line)) await once(this.gzip, 'drain');
  }

  async beginTable(table: ArchiveTable): Promise<void> {
    this.table = { name: table.table, checksum: new TableChecksum() };
    await this.line(JSON.stringify(table));
  }

  /** A batch of the table's rows, written at once. */
  async rows(rows: readonly CanonicalRow[]): Promise<void> {
    let text = '';
    for (const values of rows) {
      const line = JSON.stringify(values);
      this.table!.checksum.add(line);
      text += `${line}\n`;
    }
    this.hash.update(text);
    if (!this.gzip.write(text)) await once(this.gzip, 'drain');
  }

  async endTable(): Promise<TableSummary> {
    const { name, checksum } = this.table!;
    const summary = checksum.summary();
    this.tables[name] = summary;
    await this.line(JSON.stringify({ end: name, ...summary }));
    this.table = undefined;
    return summary;
  }

  /** Writes the manifest, and gives the archive its name once it is on disk. */
  async finish(): Promise<Record<string, TableSummary>> {
    const manifest = { manifest: { tables: this.tables } };
    const digest = this.hash.copy().digest('hex');
    await this.line(JSON.stringify({ ...manifest, sha256: digest }));
    this.gzip.end();
    await once(this.out, 'close');
    const handle = await open(this.partial, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(this.partial, this.file);
    return this.tables;
  }

  async abort(): Promise<void> {
    this.gzip.destroy();
    this.out.destroy();
    await rm(this.partial, { force: true });
  }
}

/** What an archive holds, in order: its header, then each table with its rows. */
export type ArchiveEntry =
  | { kind: 'table'; table: ArchiveTable }
  | { kind: 'rows'; table: ArchiveTable; rows: CanonicalRow[] }
  | { kind: 'end'; table: ArchiveTable; summary: TableSummary };

/** Rows handed on at once while reading: a restore's insert takes them together. */
export const ROWS_AT_ONCE = 2_000;

/**
 * Reads an archive, checking it as it goes: the header, every row against its table's
 * columns, every table's count and checksum, and the manifest with the SHA-256 of all that
 * came before. Anything else, a damaged gzip stream or an archive cut short, throws an
 * ArchiveError that names the line.
 */
export class ArchiveReader {
  header?: ArchiveHeader;
  manifest?: ArchiveManifest['manifest'];

  constructor(private readonly file: string) {}

  /** The header alone, read from the start of the file. */
  static async header(file: string): Promise<ArchiveHeader> {
    const reader = new ArchiveReader(file);
    const entries = reader.entries();
    try {
      await entries.next();
    } finally {
      await entries.return(undefined);
    }
    return reader.header!;
  }

  async *entries(): AsyncGenerator<ArchiveEntry> {
    const source = createReadStream(this.file);
    const gunzip = createGunzip();
    source.on('error', (error) => gunzip.destroy(error));
    const lines = createInterface({
      input: source.pipe(gunzip),
      crlfDelay: Infinity,
    });
    const hash = createHash('sha256');
    const seen: Record<string, TableSummary> = {};
    let number = 0;
    let table: ArchiveTable | undefined;
    let checksum = new TableChecksum();
    let rows: CanonicalRow[] = [];
    const fail = (problem: string): never => {
      throw new ArchiveError(
        `the archive ${this.file} is damaged at line ${number}: ${problem}`,
      );
    };
    try {
      for await (const text of lines) {
        number += 1;
        if (this.manifest) fail('there is more after the manifest');
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          fail('the line is not JSON');
        }
        if (number === 1) {
          this.header = readHeader(parsed, fail);
          hash.update(`${text}\n`);
          continue;
        }
        if (Array.isArray(parsed)) {
          if (!table) fail('a row outside a table');
          if (parsed.length !== table!.columns.length) {
            fail(
              `a row of ${table!.table} has ${parsed.length} values, not ${table!.columns.length}`,
            );
          }
          checksum.add(text);
          rows.push(parsed as CanonicalRow);
          if (rows.length >= ROWS_AT_ONCE) {
            yield { kind: 'rows', table: table!, rows };
            rows = [];
          }
        } else if (isObject(parsed) && 'table' in parsed) {
          if (table) fail(`table ${table.table} has no end`);
          table = readTable(parsed, fail);
          if (table.table in seen) fail(`table ${table.table} comes twice`);
          checksum = new TableChecksum();
          yield { kind: 'table', table };
        } else if (isObject(parsed) && 'end' in parsed) {
          const end = parsed as unknown as TableEnd;
          if (!table || end.end !== table.table) fail('an end of no table');
          if (rows.length > 0) yield { kind: 'rows', table: table!, rows };
          rows = [];
          const summary = checksum.summary();
          if (end.rows !== summary.rows || end.checksum !== summary.checksum) {
            fail(
              `table ${table!.table} holds ${summary.rows} rows with checksum ${summary.checksum}, its end says ${end.rows} with ${end.checksum}`,
            );
          }
          seen[table!.table] = summary;
          yield { kind: 'end', table: table!, summary };
          table = undefined;
        } else if (isObject(parsed) && 'manifest' in parsed) {
          const manifest = parsed as unknown as ArchiveManifest;
          if (table) fail(`table ${table.table} has no end`);
          if (manifest.sha256 !== hash.copy().digest('hex')) {
            fail('the SHA-256 of the lines before the manifest differs');
          }
          if (
            JSON.stringify(sortedKeys(manifest.manifest?.tables ?? {})) !==
            JSON.stringify(sortedKeys(seen))
          ) {
            fail("the manifest's tables differ from those the archive holds");
          }
          this.manifest = manifest.manifest;
          continue;
        } else {
          fail('a line of no known kind');
        }
        hash.update(`${text}\n`);
      }
    } catch (error) {
      if (error instanceof ArchiveError) throw error;
      throw new ArchiveError(
        `the archive ${this.file} cannot be read after line ${number}: ${(error as Error).message}`,
        { cause: error },
      );
    } finally {
      lines.close();
      source.destroy();
    }
    if (number === 0) {
      throw new ArchiveError(`the archive ${this.file} is empty`);
    }
    if (!this.manifest) {
      throw new ArchiveError(
        `the archive ${this.file} is cut short after line ${number}: it has no manifest`,
      );
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function sortedKeys(tables: Record<string, TableSummary>) {
  return Object.keys(tables)
    .sort()
    .map((name) => [name, tables[name].rows, tables[name].checksum]);
}

function readHeader(
  parsed: unknown,
  fail: (problem: string) => never,
): ArchiveHeader {
  if (!isObject(parsed) || parsed.format !== ARCHIVE_FORMAT) {
    fail(`it is not a plant store archive (no "format": "${ARCHIVE_FORMAT}")`);
  }
  const header = parsed as unknown as ArchiveHeader;
  if (typeof header.version !== 'number' || header.version > ARCHIVE_VERSION) {
    fail(
      `its format version ${String(header.version)} is newer than this release reads (${ARCHIVE_VERSION}): restore it with the release that wrote it (${String(header.service)}) or a newer one`,
    );
  }
  if (
    !Array.isArray(header.migrations) ||
    !header.migrations.every((name) => typeof name === 'string') ||
    !Number.isSafeInteger(header.schema)
  ) {
    fail('its header gives no schema version');
  }
  return header;
}

function readTable(
  parsed: Record<string, unknown>,
  fail: (problem: string) => never,
): ArchiveTable {
  const { table, columns } = parsed;
  if (
    typeof table !== 'string' ||
    !Array.isArray(columns) ||
    !columns.every(
      (column) =>
        isObject(column) &&
        typeof column.name === 'string' &&
        typeof column.kind === 'string',
    )
  ) {
    fail('a table without its name and columns');
  }
  return parsed as unknown as ArchiveTable;
}
