import { createHash } from 'node:crypto';
import {
  migrationTimestamp,
  postgresKind,
  schemaVersion,
  sqliteKind,
  TableChecksum,
  timeFromText,
} from './archive-format';

/** The checksum as docs/decisions.md, "Backups and moves", defines it, in BigInt arithmetic. */
function reference(lines: string[]): string {
  const sum = lines.reduce(
    (total, line) =>
      (total + BigInt(`0x${createHash('sha256').update(line).digest('hex')}`)) %
      (1n << 256n),
    0n,
  );
  return sum.toString(16).padStart(64, '0');
}

describe('TableChecksum', () => {
  const checksumOf = (lines: string[]) => {
    const checksum = new TableChecksum();
    lines.forEach((line) => checksum.add(line));
    return checksum.summary();
  };

  it('is the sum of the rows’ SHA-256 modulo 2^256, carries across every lane included', () => {
    // enough rows that the sum wraps past 2^256 many times
    const lines = Array.from(
      { length: 3000 },
      (_, index) => `["${index}","Plant ${index}",null]`,
    );
    expect(checksumOf(lines)).toEqual({
      rows: 3000,
      checksum: reference(lines),
    });
  });

  it('does not depend on the order rows come in, and changes with any row', () => {
    const lines = ['["1","Fern"]', '["2","Ivy"]', '["3","Oak"]'];
    const summary = checksumOf(lines);
    expect(checksumOf([...lines].reverse())).toEqual(summary);
    expect(checksumOf(['["1","Fern"]', '["2","Ivy"]']).checksum).not.toBe(
      summary.checksum,
    );
    expect(
      checksumOf(['["1","Fern"]', '["2","Ivy"]', '["3","Yew"]']).checksum,
    ).not.toBe(summary.checksum);
  });

  it('is 64 zeros for no rows', () => {
    expect(checksumOf([])).toEqual({ rows: 0, checksum: '0'.repeat(64) });
  });
});

describe('column kinds', () => {
  it.each([
    ['bigint', 'int'],
    ['INTEGER', 'int'],
    ['smallint', 'int'],
    ['datetime', 'time'],
    ['timestamp', 'time'],
    ['date', 'time'],
    ['boolean', 'bool'],
    ['blob', 'bytes'],
    ['real', 'real'],
    ['double precision', 'real'],
    ['float', 'real'],
    ['varchar(36)', 'text'],
    ['text', 'text'],
    ['', 'text'],
  ])('SQLite declares %j: %s', (declared, kind) => {
    expect(sqliteKind(declared)).toBe(kind);
  });

  it.each([
    ['int2', 'int'],
    ['int4', 'int'],
    ['int8', 'int'],
    ['timestamptz', 'time'],
    ['timestamp', 'time'],
    ['date', 'time'],
    ['bool', 'bool'],
    ['bytea', 'bytes'],
    ['float4', 'real'],
    ['float8', 'real'],
    ['varchar', 'text'],
    ['text', 'text'],
    ['jsonb', 'text'],
    ['numeric', 'text'],
  ])('PostgreSQL declares %s: %s', (udt, kind) => {
    expect(postgresKind(udt)).toBe(kind);
  });
});

describe('timeFromText', () => {
  it('reads SQLite’s stored times, with or without milliseconds, and ISO, as UTC', () => {
    expect(timeFromText('2026-12-05 09:30:00.123')?.toISOString()).toBe(
      '2026-12-05T09:30:00.123Z',
    );
    expect(timeFromText('2026-12-05 09:30:00')?.toISOString()).toBe(
      '2026-12-05T09:30:00.000Z',
    );
    expect(timeFromText('2026-12-05 09:30')?.toISOString()).toBe(
      '2026-12-05T09:30:00.000Z',
    );
    expect(timeFromText('2026-12-05T09:30:00.1')?.toISOString()).toBe(
      '2026-12-05T09:30:00.100Z',
    );
    expect(timeFromText('2026-12-05T09:30:00')?.toISOString()).toBe(
      '2026-12-05T09:30:00.000Z',
    );
    expect(timeFromText('2026-12-05T09:30:00.123Z')?.toISOString()).toBe(
      '2026-12-05T09:30:00.123Z',
    );
    expect(timeFromText('2026-12-05T09:30:00+02:00')?.toISOString()).toBe(
      '2026-12-05T07:30:00.000Z',
    );
  });

  it('gives nothing for text that is no time', () => {
    expect(timeFromText('yesterday')).toBeUndefined();
    expect(timeFromText('')).toBeUndefined();
    expect(timeFromText('x2026-12-05 09:30:00')).toBeUndefined();
    expect(timeFromText('2026-12-05 09:30:00 and more')).toBeUndefined();
    expect(timeFromText('2026-13-45 09:30:00')).toBeUndefined();
    expect(timeFromText('Sat Dec 05 2026 09:30:00')).toBeUndefined();
  });
});

describe('schema versions', () => {
  it('is the timestamp a migration’s name ends with, the newest of a store’s', () => {
    expect(migrationTimestamp('SkippedEvents1795940000000')).toBe(
      1795940000000,
    );
    expect(migrationTimestamp('NoTimestamp')).toBe(0);
    expect(migrationTimestamp('Copy1111111111111Of1795940000000')).toBe(
      1795940000000,
    );
    expect(
      schemaVersion([
        'Initial1795654899005',
        'StoreMoves1795950000000',
        'SkippedEvents1795940000000',
      ]),
    ).toBe(1795950000000);
    expect(schemaVersion([])).toBe(0);
  });
});
