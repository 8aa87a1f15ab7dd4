import {
  ArgumentsHost,
  BadRequestException,
  ConsoleLogger,
  Logger,
} from '@nestjs/common';
import { QueryFailedError } from 'typeorm';
import {
  DatabaseBusyError,
  DuplicateKeyError,
} from '../../database/database-errors';
import { DatabaseAvailabilityService } from '../../database/database-availability.service';
import type { SchemaCompatibilityService } from '../../database/schema-compatibility.service';
import {
  SCHEMA_MISMATCH_MESSAGE,
  toErrorAnswer,
} from '../errors/error-answers';
import { HttpErrorWithHeaders } from '../errors/http-error-with-headers';
import { AllExceptionsFilter } from './all-exceptions.filter';

describe('AllExceptionsFilter', () => {
  beforeAll(() => {
    Logger.overrideLogger(false);
  });

  afterAll(() => {
    Logger.overrideLogger(new ConsoleLogger());
  });

  function hostFor(response: object): ArgumentsHost {
    return {
      switchToHttp: () => ({
        getResponse: () => response,
        getRequest: () => ({}),
      }),
    } as unknown as ArgumentsHost;
  }

  it('writes the Error body with its status and headers', () => {
    const response = {
      headersSent: false,
      status: jest.fn().mockReturnThis(),
      set: jest.fn().mockReturnThis(),
      json: jest.fn().mockReturnThis(),
    };
    new AllExceptionsFilter(new DatabaseAvailabilityService()).catch(
      new HttpErrorWithHeaders(403, 'lacks scope', {
        'WWW-Authenticate': 'Bearer error="insufficient_scope"',
      }),
      hostFor(response),
    );
    expect(response.status).toHaveBeenCalledWith(403);
    expect(response.set).toHaveBeenCalledWith({
      'WWW-Authenticate': 'Bearer error="insufficient_scope"',
    });
    expect(response.json).toHaveBeenCalledWith({
      error: 403,
      message: 'lacks scope',
    });
  });

  it('cuts the connection when the answer has already started', () => {
    const response = {
      headersSent: true,
      destroy: jest.fn(),
      status: jest.fn(),
    };
    new AllExceptionsFilter(new DatabaseAvailabilityService()).catch(
      new Error('late'),
      hostFor(response),
    );
    expect(response.destroy).toHaveBeenCalled();
    expect(response.status).not.toHaveBeenCalled();
  });

  it('logs a database outage once, as a warning, however many requests meet it', () => {
    const error = jest.spyOn(Logger.prototype, 'error');
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const availability = new DatabaseAvailabilityService();
    const filter = new AllExceptionsFilter(availability);
    try {
      for (let i = 0; i < 3; i += 1) {
        const response = {
          headersSent: false,
          status: jest.fn().mockReturnThis(),
          set: jest.fn().mockReturnThis(),
          json: jest.fn().mockReturnThis(),
        };
        filter.catch(
          Object.assign(new Error('connect ECONNREFUSED'), {
            code: 'ECONNREFUSED',
          }),
          hostFor(response),
        );
        expect(response.status).toHaveBeenCalledWith(503);
      }
      expect(error).not.toHaveBeenCalled();
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn).toHaveBeenCalledWith(
        'Database does not answer (connect ECONNREFUSED): requests that need it get 503 and readiness is 503 until it does',
      );
      expect(availability.answers).toBe(false);
    } finally {
      error.mockRestore();
      warn.mockRestore();
    }
  });

  describe('a statement that meets a schema another release migrated past the code', () => {
    const misfits = [
      [
        'PostgreSQL, a column',
        { code: '42703', message: 'column Plant.tag does not exist' },
      ],
      [
        'PostgreSQL, a table',
        { code: '42P01', message: 'relation "plants" does not exist' },
      ],
      [
        'SQLite, a column',
        { code: 'SQLITE_ERROR', message: 'no such column: tag' },
      ],
      [
        'SQLite, a table',
        { code: 'SQLITE_ERROR', message: 'no such table: plants' },
      ],
      [
        'SQLite, an insert',
        {
          code: 'SQLITE_ERROR',
          message: 'table plants has no column named tag',
        },
      ],
    ] as const;

    it.each(misfits)(
      'answers %s with 503, logs nothing per request, and has readiness look again',
      (_case, driverError) => {
        const error = jest.spyOn(Logger.prototype, 'error');
        const suspect = jest.fn();
        const response = {
          headersSent: false,
          status: jest.fn().mockReturnThis(),
          set: jest.fn().mockReturnThis(),
          json: jest.fn().mockReturnThis(),
        };
        try {
          new AllExceptionsFilter(new DatabaseAvailabilityService(), {
            suspect,
          } as unknown as SchemaCompatibilityService).catch(
            new QueryFailedError(
              'SELECT',
              [],
              Object.assign(new Error(driverError.message), driverError),
            ),
            hostFor(response),
          );
          expect(response.status).toHaveBeenCalledWith(503);
          expect(response.json).toHaveBeenCalledWith({
            error: 503,
            message: SCHEMA_MISMATCH_MESSAGE,
          });
          expect(suspect).toHaveBeenCalledTimes(1);
          expect(error).not.toHaveBeenCalled();
        } finally {
          error.mockRestore();
        }
      },
    );

    it('leaves another SQLite error a 500', () => {
      expect(
        toErrorAnswer(
          new QueryFailedError(
            'SELECT',
            [],
            Object.assign(new Error('near "SELEC": syntax error'), {
              code: 'SQLITE_ERROR',
            }),
          ),
        ).body.error,
      ).toBe(500);
    });
  });

  it('answers a busy database with 503 and Retry-After, and logs no outage nor error', () => {
    const error = jest.spyOn(Logger.prototype, 'error');
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const availability = new DatabaseAvailabilityService();
    const response = {
      headersSent: false,
      status: jest.fn().mockReturnThis(),
      set: jest.fn().mockReturnThis(),
      json: jest.fn().mockReturnThis(),
    };
    try {
      new AllExceptionsFilter(availability).catch(
        new DatabaseBusyError(
          'no database connection came free within 10000 ms',
        ),
        hostFor(response),
      );
      expect(response.status).toHaveBeenCalledWith(503);
      expect(response.set).toHaveBeenCalledWith({ 'Retry-After': '1' });
      expect(error).not.toHaveBeenCalled();
      expect(warn).not.toHaveBeenCalled();
      expect(availability.answers).toBe(true);
    } finally {
      error.mockRestore();
      warn.mockRestore();
    }
  });

  it.each([
    [new Error('boom'), 500, true],
    // chosen by the service (shutting down): logged by whoever chose it, once
    [new HttpErrorWithHeaders(503, 'shutting down', {}), 503, false],
    [new HttpErrorWithHeaders(499, 'client', {}), 499, false],
    [new BadRequestException('bad'), 400, false],
    // the request's fault, found by the database: not the service's error
    [new DuplicateKeyError('Plant', [['id', 1n]], undefined), 400, false],
  ])(
    'logs %s as an error with its request id only when it is an unexpected 5xx',
    (exception, status, logged) => {
      const error = jest.spyOn(Logger.prototype, 'error');
      const response = {
        headersSent: false,
        status: jest.fn().mockReturnThis(),
        set: jest.fn().mockReturnThis(),
        json: jest.fn().mockReturnThis(),
      };
      const host = {
        switchToHttp: () => ({
          getResponse: () => response,
          getRequest: () => ({ id: 'req-7' }),
        }),
      } as unknown as ArgumentsHost;
      try {
        new AllExceptionsFilter(new DatabaseAvailabilityService()).catch(
          exception,
          host,
        );
        expect(response.status).toHaveBeenCalledWith(status);
        if (logged) {
          expect(error).toHaveBeenCalledWith(
            { reqId: 'req-7', err: exception },
            `request req-7 failed with ${status}`,
          );
        } else {
          expect(error).not.toHaveBeenCalled();
        }
      } finally {
        error.mockRestore();
      }
    },
  );
});
