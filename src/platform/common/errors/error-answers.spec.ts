import { BadRequestException, NotFoundException } from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import {
  DatabaseBusyError,
  DuplicateKeyError,
  isDatabaseBusy,
  isDatabaseUnavailable,
} from '../../database/database-errors';
import {
  BUSY_MESSAGE,
  BUSY_RETRY_AFTER_SECONDS,
  toErrorAnswer,
  WRITE_OUTCOME_UNKNOWN_MESSAGE,
} from './error-answers';
import { HttpErrorWithHeaders } from './http-error-with-headers';

describe('toErrorAnswer', () => {
  it('keeps the status and message of an HttpException', () => {
    expect(
      toErrorAnswer(new BadRequestException('name must be a string')),
    ).toEqual({
      body: { error: 400, message: 'name must be a string' },
      headers: {},
    });
  });

  it("joins the message list of Nest's own exceptions", () => {
    expect(
      toErrorAnswer(new BadRequestException(['a is wrong', 'b is wrong'])).body,
    ).toEqual({
      error: 400,
      message: 'a is wrong; b is wrong',
    });
  });

  it("uses Nest's route-not-found message", () => {
    expect(toErrorAnswer(new NotFoundException('Cannot GET /x')).body).toEqual({
      error: 404,
      message: 'Cannot GET /x',
    });
  });

  it('carries the headers of an HttpErrorWithHeaders', () => {
    const answer = toErrorAnswer(
      new HttpErrorWithHeaders(401, 'no token', {
        'WWW-Authenticate': 'Bearer',
      }),
    );
    expect(answer).toEqual({
      body: { error: 401, message: 'no token' },
      headers: { 'WWW-Authenticate': 'Bearer' },
    });
  });

  it.each([
    'SQLITE_FULL',
    'SQLITE_IOERR_WRITE',
    'SQLITE_READONLY',
    '57P01',
    '08006',
  ])('answers the database failure %s with 503', (code) => {
    const driverError = Object.assign(
      new Error('disk I/O error at /var/lib/x'),
      { code },
    );
    expect(
      toErrorAnswer(new QueryFailedError('INSERT', [], driverError)).body,
    ).toEqual({
      error: 503,
      message: 'the database is unavailable; try again later',
    });
  });

  describe('a database that is there but busy', () => {
    const failedWith = (code: string) =>
      new QueryFailedError(
        'UPDATE stock ...',
        [],
        Object.assign(new Error(`failed with ${code}`), { code }),
      );

    it.each([
      [
        'a wait for a pooled connection that ran out',
        new DatabaseBusyError('no connection came free'),
      ],
      ["another connection holding SQLite's lock", failedWith('SQLITE_BUSY')],
      ['a table SQLite keeps locked', failedWith('SQLITE_LOCKED_SHAREDCACHE')],
      ['a serialization failure after every retry', failedWith('40001')],
      ['a deadlock after every retry', failedWith('40P01')],
      ['a lock not granted in time', failedWith('55P03')],
      ['a statement cancelled at its timeout', failedWith('57014')],
      [
        "pg-pool's own wait for a pooled connection",
        new Error('timeout exceeded when trying to connect'),
      ],
    ])(
      'answers %s with 503, Retry-After, and that nothing was changed, for a write too',
      (_, error) => {
        for (const method of ['GET', 'POST', 'DELETE']) {
          expect(toErrorAnswer(error, method)).toEqual({
            body: { error: 503, message: BUSY_MESSAGE },
            headers: { 'Retry-After': String(BUSY_RETRY_AFTER_SECONDS) },
          });
        }
        expect(isDatabaseBusy(error)).toBe(true);
        expect(isDatabaseUnavailable(error)).toBe(false);
      },
    );

    it('tells it apart from a connection that could not be opened in time, which is an outage', () => {
      const error = new Error(
        'Connection terminated due to connection timeout',
      );
      expect(isDatabaseBusy(error)).toBe(false);
      expect(isDatabaseUnavailable(error)).toBe(true);
    });

    it('says nothing was changed, and when to try again', () => {
      expect(BUSY_MESSAGE).toContain('nothing was changed');
      expect(BUSY_MESSAGE).not.toContain('may or may not');
    });
  });

  it.each(['POST', 'PUT', 'PATCH', 'DELETE'])(
    'says of a %s cut off from the database that the change may have been made',
    (method) => {
      const lost = new QueryFailedError(
        'INSERT',
        [],
        Object.assign(new Error('disk I/O error'), {
          code: 'SQLITE_IOERR_WRITE',
        }),
      );
      expect(toErrorAnswer(lost, method).body).toEqual({
        error: 503,
        message: WRITE_OUTCOME_UNKNOWN_MESSAGE,
      });
      expect(WRITE_OUTCOME_UNKNOWN_MESSAGE).toContain(
        'may or may not have been made',
      );
    },
  );

  describe("database errors that are the request's fault, whichever module hit them", () => {
    const failed = (error: object) =>
      new QueryFailedError('INSERT INTO orders ...', [7], error as Error);

    it('answers a DuplicateKeyError its module did not word with 400 and its message, naming the key', () => {
      expect(
        toErrorAnswer(new DuplicateKeyError('Plant', [['id', 42n]], null)).body,
      ).toEqual({ error: 400, message: 'a record with id 42 already exists' });
      expect(
        new DuplicateKeyError(
          'OrderLine',
          [
            ['order_id', 7n],
            ['line', 2],
          ],
          null,
        ).message,
      ).toBe('a record with order_id 7 and line 2 already exists');
    });

    it.each([
      [
        'SQLite primary key',
        {
          code: 'SQLITE_CONSTRAINT_PRIMARYKEY',
          message: 'UNIQUE constraint failed: orders.id',
        },
        'a record with this id already exists',
      ],
      [
        'SQLite unique index',
        {
          code: 'SQLITE_CONSTRAINT_UNIQUE',
          message: 'UNIQUE constraint failed: orders.shop_id, orders.number',
        },
        'a record with this shop_id and number already exists',
      ],
      [
        'PostgreSQL',
        {
          code: '23505',
          message: 'duplicate key value violates unique constraint "x"',
          detail: 'Key (number)=(7) already exists.',
        },
        'a record with this number already exists',
      ],
    ])(
      'answers a raw unique violation (%s) with 400, never 500',
      (_label, driverError, message) => {
        expect(toErrorAnswer(failed(driverError)).body).toEqual({
          error: 400,
          message,
        });
      },
    );

    it('answers text PostgreSQL cannot hold (SQLSTATE 22021) with 400 naming U+0000', () => {
      expect(
        toErrorAnswer(
          failed({ code: '22021', message: 'invalid byte sequence' }),
        ).body,
      ).toEqual({
        error: 400,
        message: expect.stringContaining('U+0000') as string,
      });
    });
  });

  it.each([
    ['an Error', new Error('SELECT * FROM secrets at /srv/db.sqlite')],
    ['a string', 'boom'],
    ['null', null],
    [
      'a constraint failure of the code',
      new QueryFailedError(
        'INSERT',
        [],
        Object.assign(new Error('x'), { code: 'SQLITE_CONSTRAINT_NOTNULL' }),
      ),
    ],
    ['an object with an unknown type', { type: 'something.else' }],
  ])('answers %s with a generic 500 and no details', (_label, exception) => {
    expect(toErrorAnswer(exception)).toEqual({
      body: { error: 500, message: 'internal server error' },
      headers: {},
    });
  });
});
