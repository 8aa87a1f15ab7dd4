import { Logger } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import { DatabaseAvailabilityService } from './database-availability.service';
import { FENCED_WRITE_MESSAGE, isWriteRefused } from './database-errors';
import { PortableDataSource } from './portable-data-source';

const failed = (code: string, message = code) =>
  new QueryFailedError(
    'INSERT',
    [],
    Object.assign(new Error(message), { code }),
  );

describe('isWriteRefused', () => {
  it.each([
    'SQLITE_FULL',
    'SQLITE_READONLY',
    'SQLITE_READONLY_DBMOVED',
    '53100',
    '25006',
  ])('holds %s for a database that answers but takes no writes', (code) => {
    expect(isWriteRefused(failed(code))).toBe(true);
  });

  it.each(['SQLITE_BUSY', 'SQLITE_IOERR', 'SQLITE_FULLY', '53200', '08006'])(
    'does not hold %s',
    (code) => {
      expect(isWriteRefused(failed(code))).toBe(false);
    },
  );

  it("holds a write a move's fence refused on SQLite, and no other trigger's refusal", () => {
    expect(
      isWriteRefused(failed('SQLITE_CONSTRAINT_TRIGGER', FENCED_WRITE_MESSAGE)),
    ).toBe(true);
    expect(
      isWriteRefused(failed('SQLITE_CONSTRAINT_TRIGGER', 'a rule of its own')),
    ).toBe(false);
    expect(
      isWriteRefused(failed('SQLITE_CONSTRAINT_CHECK', FENCED_WRITE_MESSAGE)),
    ).toBe(false);
  });

  it('does not hold an error without a code', () => {
    expect(isWriteRefused(new Error('database or disk is full'))).toBe(false);
  });
});

describe('DatabaseAvailabilityService', () => {
  let warn: jest.SpyInstance;
  let log: jest.SpyInstance;

  beforeEach(() => {
    warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation();
    log = jest.spyOn(Logger.prototype, 'log').mockImplementation();
  });

  afterEach(() => jest.restoreAllMocks());

  /** An availability whose data source's `writeCommitted` is real. */
  function withDataSource(): {
    availability: DatabaseAvailabilityService;
    dataSource: PortableDataSource;
  } {
    const dataSource = Object.create(
      PortableDataSource.prototype,
    ) as PortableDataSource;
    Object.assign(dataSource, {
      commitListeners: [],
      refuseWaiting: jest.fn(),
    });
    const availability = new DatabaseAvailabilityService(dataSource);
    availability.onModuleInit();
    return { availability, dataSource };
  }

  it('logs refused writes once, keeps answering reads, and ends only with a committed write', () => {
    const { availability, dataSource } = withDataSource();
    for (let i = 0; i < 3; i += 1) {
      availability.wentAway(failed('SQLITE_FULL', 'database or disk is full'));
      // a read that succeeds, as readiness and the dispatcher's poll report it
      availability.cameBack();
    }
    expect(warn.mock.calls).toEqual([
      [
        'Database refuses writes (database or disk is full): writes get 503 until it takes them again; reads are served',
      ],
    ]);
    expect(log).not.toHaveBeenCalled();
    expect(availability.answers).toBe(true);

    dataSource.writeCommitted();
    dataSource.writeCommitted();
    expect(log.mock.calls).toEqual([
      ['Database takes writes again: serving writes again'],
    ]);
  });

  it('keeps an unreachable database apart: its outage ends with a read', () => {
    const { availability, dataSource } = withDataSource();
    availability.wentAway(failed('ECONNREFUSED', 'connect ECONNREFUSED'));
    expect(availability.answers).toBe(false);
    dataSource.writeCommitted();
    expect(availability.answers).toBe(false);
    availability.cameBack();
    expect(availability.answers).toBe(true);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(log.mock.calls).toEqual([['Database answers again: serving again']]);
  });

  it('tells the work waiting for a connection at once when the database is away, not when it only refuses writes', () => {
    const { availability, dataSource } = withDataSource();
    availability.wentAway(failed('SQLITE_FULL', 'database or disk is full'));
    expect(dataSource.refuseWaiting).not.toHaveBeenCalled();
    const refused = failed('ECONNREFUSED', 'connect ECONNREFUSED');
    availability.wentAway(refused);
    expect(dataSource.refuseWaiting).toHaveBeenCalledWith(refused);
  });
});
