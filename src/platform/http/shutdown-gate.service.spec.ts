import type { INestApplication } from '@nestjs/common';
import { Logger, ServiceUnavailableException } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import {
  CLOSE_AFTER_CUT_MS,
  ShutdownGateService,
} from './shutdown-gate.service';

describe('ShutdownGateService', () => {
  beforeAll(() => {
    Logger.overrideLogger(false);
  });

  function fakeApp(closesAfterMs: number) {
    const closeAllConnections = jest.fn();
    const app = {
      getHttpServer: () => ({ closeAllConnections }),
      close: () =>
        new Promise<void>((resolve) => setTimeout(resolve, closesAfterMs)),
    } as unknown as INestApplication;
    return { app, closeAllConnections };
  }

  function runMiddleware(gate: ShutdownGateService) {
    const next = jest.fn();
    const response = { setHeader: jest.fn() };
    gate.refuseWhileClosing(
      {} as Request,
      response as unknown as Response,
      next as NextFunction,
    );
    return { next, response };
  }

  it('lets requests through untouched until shutdown begins, then answers 503 and closes the connection', async () => {
    const gate = new ShutdownGateService();
    expect(gate.isDraining).toBe(false);
    const before = runMiddleware(gate);
    expect(before.next).toHaveBeenCalledWith();
    expect(before.response.setHeader).not.toHaveBeenCalled();
    const closing = gate.close(fakeApp(10).app, { delayMs: 0, graceMs: 1000 });
    const { next, response } = runMiddleware(gate);
    const refusal = next.mock.calls[0][0] as ServiceUnavailableException;
    expect(refusal).toBeInstanceOf(ServiceUnavailableException);
    expect(refusal.message).toBe('the service is shutting down');
    expect(response.setHeader).toHaveBeenCalledWith('Connection', 'close');
    await closing;
  });

  it('says what it does, once for each step, as warnings; an error only when it cuts', async () => {
    const warn = jest.spyOn(Logger.prototype, 'warn');
    const error = jest.spyOn(Logger.prototype, 'error');
    try {
      await new ShutdownGateService().close(fakeApp(10).app, {
        delayMs: 20,
        graceMs: 1000,
      });
      expect(warn.mock.calls).toEqual([
        [
          'shutting down: readiness answers 503; still serving for 20 ms (SHUTDOWN_DELAY), then draining',
        ],
        [
          'shutting down: no longer accepting connections; in-flight requests have 1000 ms',
        ],
      ]);
      expect(error).not.toHaveBeenCalled();
      await new ShutdownGateService().close(fakeApp(300).app, {
        delayMs: 0,
        graceMs: 50,
      });
      expect(error).toHaveBeenCalledWith(
        'requests were still running 50 ms after shutdown began; cutting them',
      );
    } finally {
      warn.mockRestore();
      error.mockRestore();
    }
  });

  it('ends CLOSE_AFTER_CUT_MS after the cut when the close never finishes (a hook waiting for ever), saying so', async () => {
    const error = jest.spyOn(Logger.prototype, 'error');
    const closeAllConnections = jest.fn();
    const app = {
      getHttpServer: () => ({ closeAllConnections }),
      close: () => new Promise<void>(() => undefined),
    } as unknown as INestApplication;
    try {
      const started = performance.now();
      await expect(
        new ShutdownGateService().close(app, { delayMs: 0, graceMs: 50 }),
      ).resolves.toBe('cut');
      const took = performance.now() - started;
      expect(took).toBeGreaterThanOrEqual(50 + CLOSE_AFTER_CUT_MS - 5);
      expect(closeAllConnections).toHaveBeenCalled();
      expect(error).toHaveBeenLastCalledWith(
        `the service had not closed ${CLOSE_AFTER_CUT_MS} ms after its requests were cut: it ends without waiting longer (a shutdown hook or the database still waits)`,
      );
    } finally {
      error.mockRestore();
    }
  });

  it.each([
    ['finishes', () => Promise.resolve()],
    ['fails', () => Promise.reject(new Error('a hook failed'))],
  ])(
    'waits for a close that %s soon after the cut, and says nothing more',
    async (_, ends) => {
      const error = jest.spyOn(Logger.prototype, 'error');
      const app = {
        getHttpServer: () => ({
          closeAllConnections: () => undefined,
        }),
        close: () =>
          new Promise<void>((resolve) => setTimeout(resolve, 100)).then(ends),
      } as unknown as INestApplication;
      try {
        const started = performance.now();
        await expect(
          new ShutdownGateService().close(app, { delayMs: 0, graceMs: 50 }),
        ).resolves.toBe('cut');
        expect(performance.now() - started).toBeLessThan(CLOSE_AFTER_CUT_MS);
        expect(error.mock.calls).toEqual([
          [
            'requests were still running 50 ms after shutdown began; cutting them',
          ],
        ]);
      } finally {
        error.mockRestore();
      }
    },
  );

  it('during the delay, serves every request, closing its connection, and says it is draining', async () => {
    const gate = new ShutdownGateService();
    const { app } = fakeApp(10);
    const closing = gate.close(app, { delayMs: 100, graceMs: 1000 });
    expect(gate.isDraining).toBe(true);
    const during = runMiddleware(gate);
    expect(during.next).toHaveBeenCalledWith();
    expect(during.response.setHeader).toHaveBeenCalledWith(
      'Connection',
      'close',
    );
    await new Promise((resolve) => setTimeout(resolve, 150));
    const after = runMiddleware(gate);
    expect(after.next.mock.calls[0][0]).toBeInstanceOf(
      ServiceUnavailableException,
    );
    await closing;
  });

  it('reports drained when the app closes within the grace period', async () => {
    const { app, closeAllConnections } = fakeApp(10);
    await expect(
      new ShutdownGateService().close(app, { delayMs: 0, graceMs: 1000 }),
    ).resolves.toBe('drained');
    expect(closeAllConnections).not.toHaveBeenCalled();
  });

  it('cuts the connections and reports cut when the grace period runs out', async () => {
    const { app, closeAllConnections } = fakeApp(300);
    await expect(
      new ShutdownGateService().close(app, { delayMs: 0, graceMs: 50 }),
    ).resolves.toBe('cut');
    expect(closeAllConnections).toHaveBeenCalled();
  });
});
