import type { DeliveryEngine } from './delivery-engine';
import { DispatchLoop } from './dispatch-loop';

describe('DispatchLoop', () => {
  it('stops only once the poll it interrupts has ended, and starts none after', async () => {
    let endPoll!: () => void;
    const poll = jest.fn(
      () =>
        new Promise<{ backlog: boolean }>((resolve) => {
          endPoll = () => resolve({ backlog: false });
        }),
    );
    const engine = { poll, attemptsInFlight: 0 } as unknown as DeliveryEngine;
    const pending: Array<() => void> = [];
    const loop = new DispatchLoop(
      engine,
      { maxInFlight: 8 },
      {
        timers: { set: (run) => pending.push(run), clear: () => undefined },
        intervalMs: 1000,
        onPolled: () => undefined,
        onError: () => undefined,
      },
    );
    loop.start();
    pending.shift()!();
    expect(poll).toHaveBeenCalledTimes(1);

    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await new Promise((resolve) => setImmediate(resolve));
    expect(stopped).toBe(false);

    endPoll();
    await stopping;
    expect(stopped).toBe(true);
    expect(pending).toEqual([]);
  });
});
