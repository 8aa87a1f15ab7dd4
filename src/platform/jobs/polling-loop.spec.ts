import { PollingLoop, type Timers } from './polling-loop';

/** Timers the test fires by hand; `clear` forgets a timer unless told to leave it (a stale one). */
function manualTimers({ clears = true } = {}) {
  const pending: { run: () => void; ms: number }[] = [];
  const timers: Timers = {
    set: (run, ms) => {
      const timer = { run, ms };
      pending.push(timer);
      return timer;
    },
    clear: (handle) => {
      const at = pending.indexOf(handle as (typeof pending)[number]);
      if (clears && at >= 0) pending.splice(at, 1);
    },
  };
  return {
    timers,
    delays: () => pending.map(({ ms }) => ms),
    fire: () => pending.shift()!.run(),
  };
}

/** A turn the test ends by hand, with the wait it says, or a failure. */
function manualTurns() {
  const ends: ((next: number | Error) => void)[] = [];
  const signals: AbortSignal[] = [];
  const turn = jest.fn(
    (signal: AbortSignal) =>
      new Promise<number>((resolve, reject) => {
        signals.push(signal);
        ends.push((next) =>
          next instanceof Error ? reject(next) : resolve(next),
        );
      }),
  );
  return { turn, signals, end: (next: number | Error) => ends.shift()!(next) };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('PollingLoop', () => {
  it('takes the first turn when started, and the next after the wait the turn says', async () => {
    const { timers, delays, fire } = manualTimers();
    const turns = manualTurns();
    const loop = new PollingLoop({ turn: turns.turn, failed: () => 1, timers });
    loop.start(25);
    expect(delays()).toEqual([25]);
    fire();
    expect(turns.turn).toHaveBeenCalledTimes(1);
    turns.end(300);
    await settled();
    expect(delays()).toEqual([300]);
  });

  it('reports a failed turn and waits what the report says', async () => {
    const { timers, delays, fire } = manualTimers();
    const turns = manualTurns();
    const failures: unknown[] = [];
    const loop = new PollingLoop({
      turn: turns.turn,
      failed: (error) => {
        failures.push(error);
        return 10_000;
      },
      timers,
    });
    loop.start();
    fire();
    const error = new Error('the database is away');
    turns.end(error);
    await settled();
    expect(failures).toEqual([error]);
    expect(delays()).toEqual([10_000]);
  });

  it('waits no less than nothing for a turn that says a time already past', async () => {
    const { timers, delays, fire } = manualTimers();
    const turns = manualTurns();
    const loop = new PollingLoop({ turn: turns.turn, failed: () => 1, timers });
    loop.start();
    fire();
    turns.end(-40);
    await settled();
    expect(delays()).toEqual([0]);
  });

  it('takes one turn at a time: a timer that fires during a turn starts none', async () => {
    const { timers, delays, fire } = manualTimers({ clears: false });
    const turns = manualTurns();
    const loop = new PollingLoop({ turn: turns.turn, failed: () => 1, timers });
    loop.start();
    // started again: the first timer stays, as this clock cannot clear it
    loop.start();
    fire();
    expect(turns.turn).toHaveBeenCalledTimes(1);
    fire();
    expect(turns.turn).toHaveBeenCalledTimes(1);
    turns.end(500);
    await settled();
    expect(delays()).toEqual([500]);
  });

  it('starts again in place of the turn its timer waits for', () => {
    const { timers, delays } = manualTimers();
    const turns = manualTurns();
    const loop = new PollingLoop({ turn: turns.turn, failed: () => 1, timers });
    loop.start(1000);
    loop.start(10);
    expect(delays()).toEqual([10]);
  });

  it('wakes to a turn at once in place of the timer, and to the next as soon as a running one ends', async () => {
    const { timers, delays, fire } = manualTimers();
    const turns = manualTurns();
    const loop = new PollingLoop({ turn: turns.turn, failed: () => 1, timers });
    loop.start(1000);
    loop.wake();
    expect(turns.turn).toHaveBeenCalledTimes(1);
    expect(delays()).toEqual([]);
    loop.wake();
    expect(turns.turn).toHaveBeenCalledTimes(1);
    turns.end(300);
    await settled();
    expect(delays()).toEqual([0]);

    // a turn not woken waits what it says
    fire();
    turns.end(300);
    await settled();
    expect(delays()).toEqual([300]);
  });

  it('takes a wake that comes after a turn ended and before its wait is set', async () => {
    const { timers, delays } = manualTimers();
    let turned = 0;
    const loop = new PollingLoop({
      turn: () => {
        turned += 1;
        // as an attempt's end would, in a microtask after the turn's own
        void Promise.resolve().then(() => loop.wake());
        return Promise.resolve(300);
      },
      failed: () => 1,
      timers,
    });
    loop.start(1000);
    loop.wake();
    await settled();
    expect(turned).toBe(1);
    expect(delays()).toEqual([0]);
  });

  it('takes no turn for a wake once stopped', async () => {
    const { timers, delays } = manualTimers();
    const turns = manualTurns();
    const loop = new PollingLoop({ turn: turns.turn, failed: () => 1, timers });
    loop.start(1000);
    await loop.stop();
    loop.wake();
    expect(turns.turn).not.toHaveBeenCalled();
    expect(delays()).toEqual([]);
  });

  it('stops once the turn it interrupts has ended, with its signal aborted, and takes none after', async () => {
    const { timers, delays, fire } = manualTimers();
    const turns = manualTurns();
    const loop = new PollingLoop({ turn: turns.turn, failed: () => 1, timers });
    loop.start();
    fire();
    let stopped = false;
    const stopping = loop.stop().then(() => (stopped = true));
    await settled();
    expect(stopped).toBe(false);
    expect(turns.signals[0].aborted).toBe(true);
    turns.end(100);
    await stopping;
    expect(delays()).toEqual([]);
    loop.start();
    expect(turns.turn).toHaveBeenCalledTimes(1);
    expect(delays()).toEqual([]);
  });
});
