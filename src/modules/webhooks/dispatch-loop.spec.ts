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

/** A loop on timers and an engine the test drives: each poll ends when the test says. */
function drivenLoop({ maxInFlight = 16, fenced = (): boolean => false } = {}) {
  interface Timer {
    run: () => void;
    ms: number;
  }
  const timers: Timer[] = [];
  const polls: Array<{
    end: (outcome: { backlog: boolean } | Error) => void;
    attemptEnded: (replaced: boolean) => void;
  }> = [];
  const engine = {
    attemptsInFlight: 0,
    giveBackClaimedAhead: jest.fn(() => Promise.resolve()),
    poll: jest.fn(
      (attemptEnded: (replaced: boolean) => void) =>
        new Promise<{ backlog: boolean }>((resolve, reject) =>
          polls.push({
            end: (outcome) =>
              outcome instanceof Error ? reject(outcome) : resolve(outcome),
            attemptEnded,
          }),
        ),
    ),
  };
  const reports: string[] = [];
  const loop = new DispatchLoop(
    engine as unknown as DeliveryEngine,
    { maxInFlight },
    {
      timers: {
        set: (run, ms) => {
          const timer = { run, ms };
          timers.push(timer);
          return timer;
        },
        clear: (handle) => {
          const at = timers.indexOf(handle as Timer);
          if (at >= 0) timers.splice(at, 1);
        },
      },
      intervalMs: 500,
      onPolled: () => reports.push('polled'),
      onError: (error) => reports.push(`failed: ${(error as Error).message}`),
      fenced,
    },
  );
  return {
    loop,
    engine,
    polls,
    reports,
    /** The delays of the timers set and not yet fired. */
    delays: () => timers.map(({ ms }) => ms),
    fire: () => timers.shift()!.run(),
    /** The next timer's run, kept past its clearing: as if it had fired as the loop stopped. */
    nextRun: () => timers[0].run,
    settled: () => new Promise((resolve) => setImmediate(resolve)),
  };
}

describe('DispatchLoop, polling', () => {
  it('polls at start, and after the interval while there is no backlog', async () => {
    const driven = drivenLoop();
    driven.loop.start();
    expect(driven.delays()).toEqual([0]);
    driven.fire();
    expect(driven.engine.poll).toHaveBeenCalledTimes(1);
    driven.polls[0].end({ backlog: false });
    await driven.settled();
    expect(driven.reports).toEqual(['polled']);
    expect(driven.delays()).toEqual([500]);
  });

  it('under a backlog, polls again after the interval unless a slot came free meanwhile', async () => {
    const driven = drivenLoop();
    driven.loop.start();
    driven.fire();
    // an attempt ending before any poll found a backlog asks for nothing
    driven.polls[0].attemptEnded(false);
    driven.polls[0].end({ backlog: true });
    await driven.settled();
    expect(driven.delays()).toEqual([500]);
    expect(driven.engine.poll).toHaveBeenCalledTimes(1);
  });

  it('under a backlog, polls as soon as a refill batch of slots is free, one poll at a time', async () => {
    const driven = drivenLoop({ maxInFlight: 16 });
    driven.loop.start();
    driven.fire();
    driven.polls[0].end({ backlog: true });
    await driven.settled();

    // 16 slots: a poll waits for 2 free ones
    driven.engine.attemptsInFlight = 15;
    driven.polls[0].attemptEnded(false);
    expect(driven.engine.poll).toHaveBeenCalledTimes(1);
    driven.engine.attemptsInFlight = 14;
    driven.polls[0].attemptEnded(false);
    expect(driven.engine.poll).toHaveBeenCalledTimes(2);

    // a slot freed while that poll runs: no second poll at once, but one as soon as it ends
    driven.polls[1].attemptEnded(false);
    expect(driven.engine.poll).toHaveBeenCalledTimes(2);
    driven.polls[1].end({ backlog: true });
    await driven.settled();
    expect(driven.delays()).toEqual([0]);
    expect(driven.reports).toEqual(['polled', 'polled']);
  });

  it('under a backlog, tops up attempts claimed ahead once a refill batch of them has started', async () => {
    const driven = drivenLoop({ maxInFlight: 16 });
    driven.loop.start();
    driven.fire();
    driven.polls[0].end({ backlog: true });
    await driven.settled();
    driven.engine.attemptsInFlight = 16;
    driven.polls[0].attemptEnded(true);
    expect(driven.engine.poll).toHaveBeenCalledTimes(1);
    driven.polls[0].attemptEnded(true);
    expect(driven.engine.poll).toHaveBeenCalledTimes(2);
  });

  it('claims nothing while the store is fenced, gives back what it claimed ahead, and looks again after the interval', async () => {
    let fenced = true;
    const driven = drivenLoop({ fenced: () => fenced });
    driven.loop.start();
    driven.fire();
    expect(driven.engine.poll).not.toHaveBeenCalled();
    expect(driven.engine.giveBackClaimedAhead).toHaveBeenCalledTimes(1);
    await driven.settled();
    expect(driven.delays()).toEqual([500]);
    fenced = false;
    driven.fire();
    expect(driven.engine.poll).toHaveBeenCalledTimes(1);
    expect(driven.engine.giveBackClaimedAhead).toHaveBeenCalledTimes(1);
    driven.polls[0].end({ backlog: false });
    await driven.settled();
  });

  it('gives back what it claimed ahead as soon as an attempt ends once the store is fenced, though a poll runs', async () => {
    let fenced = false;
    const driven = drivenLoop({ maxInFlight: 16, fenced: () => fenced });
    driven.loop.start();
    driven.fire();
    driven.polls[0].end({ backlog: true });
    await driven.settled();
    driven.engine.attemptsInFlight = 14;
    driven.polls[0].attemptEnded(false);
    expect(driven.engine.poll).toHaveBeenCalledTimes(2);

    fenced = true;
    driven.polls[1].attemptEnded(false);
    expect(driven.engine.giveBackClaimedAhead).toHaveBeenCalledTimes(1);
    driven.polls[1].end({ backlog: true });
    await driven.settled();
    // the fenced wake asked for no poll: the next look is after the interval
    expect(driven.delays()).toEqual([500]);
    expect(driven.engine.poll).toHaveBeenCalledTimes(2);
  });

  it('reports a failed poll and tries again after the interval; once stopped, neither', async () => {
    const driven = drivenLoop();
    driven.loop.start();
    driven.fire();
    driven.polls[0].end(new Error('the database is away'));
    await driven.settled();
    expect(driven.reports).toEqual(['failed: the database is away']);
    expect(driven.delays()).toEqual([500]);

    driven.fire();
    const stopping = driven.loop.stop();
    driven.polls[1].end(new Error('closed'));
    await stopping;
    expect(driven.reports).toEqual(['failed: the database is away']);
    expect(driven.delays()).toEqual([]);
  });

  it('starts no poll once stopped, even from a timer that had already fired', async () => {
    const driven = drivenLoop();
    driven.loop.start();
    const run = driven.nextRun();
    await driven.loop.stop();
    expect(driven.delays()).toEqual([]);
    run();
    expect(driven.engine.poll).not.toHaveBeenCalled();
    expect(driven.delays()).toEqual([]);
  });
});
