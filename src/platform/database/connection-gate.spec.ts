import { ConnectionGate } from './connection-gate';

/** A step that ends when the test says so, recording when it starts and ends. */
function step(log: string[], name: string) {
  let finish!: () => void;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  return {
    run: async () => {
      log.push(`${name} starts`);
      await finished;
      log.push(`${name} ends`);
    },
    finish,
  };
}

/** Lets every queued continuation run. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('ConnectionGate', () => {
  it('runs statements beside each other while no transaction holds the connection', async () => {
    const gate = new ConnectionGate();
    const log: string[] = [];
    const a = step(log, 'a');
    const b = step(log, 'b');
    const done = Promise.all([gate.statement(a.run), gate.statement(b.run)]);
    await settle();
    expect(log).toEqual(['a starts', 'b starts']);
    expect(gate.busy).toBe(false);
    a.finish();
    b.finish();
    await done;
  });

  it('gives a transaction the connection only once the statements in flight have ended', async () => {
    const gate = new ConnectionGate();
    const log: string[] = [];
    const a = step(log, 'a');
    const statement = gate.statement(a.run);
    const owner = {};
    let holding = false;
    const acquired = gate.acquire(owner).then(() => (holding = true));
    await settle();
    expect(holding).toBe(false);
    expect(gate.busy).toBe(true);
    a.finish();
    await statement;
    await acquired;
    expect(gate.holder).toBe(owner);
    gate.release(owner);
    expect(gate.busy).toBe(false);
  });

  it('holds statements that come while a transaction runs until it ends', async () => {
    const gate = new ConnectionGate();
    const log: string[] = [];
    const owner = {};
    await gate.acquire(owner);
    const a = step(log, 'a');
    const statement = gate.statement(a.run);
    await settle();
    expect(log).toEqual([]);
    log.push('released');
    gate.release(owner);
    await settle();
    expect(log).toEqual(['released', 'a starts']);
    a.finish();
    await statement;
  });

  it('serves statements and transactions first come, first served', async () => {
    const gate = new ConnectionGate();
    const log: string[] = [];
    const first = {};
    const second = {};
    await gate.acquire(first);
    const a = step(log, 'a');
    const b = step(log, 'b');
    const statementA = gate.statement(a.run);
    const secondAcquired = gate
      .acquire(second)
      .then(() => log.push('second holds'));
    const statementB = gate.statement(b.run);
    await settle();
    expect(log).toEqual([]);

    gate.release(first);
    await settle();
    // a came before the second transaction: it runs, and the transaction waits for it
    expect(log).toEqual(['a starts']);
    a.finish();
    await statementA;
    await secondAcquired;
    await settle();
    // b came after the second transaction: it waits for that one to end
    expect(log).toEqual(['a starts', 'a ends', 'second holds']);
    gate.release(second);
    await settle();
    expect(log).toEqual(['a starts', 'a ends', 'second holds', 'b starts']);
    b.finish();
    await statementB;
  });

  it('ignores a release by anyone but the holder', async () => {
    const gate = new ConnectionGate();
    const owner = {};
    await gate.acquire(owner);
    gate.release({});
    expect(gate.holder).toBe(owner);
  });

  it('counts a statement that fails as ended', async () => {
    const gate = new ConnectionGate();
    await expect(
      gate.statement(() => Promise.reject(new Error('no such table'))),
    ).rejects.toThrow('no such table');
    const owner = {};
    await gate.acquire(owner);
    expect(gate.holder).toBe(owner);
  });

  it('counts a statement that throws before it returns a promise as ended, and rejects', async () => {
    const gate = new ConnectionGate();
    await expect(
      gate.statement(() => {
        throw new Error('bad parameters');
      }),
    ).rejects.toThrow('bad parameters');
    const owner = {};
    await gate.acquire(owner);
    expect(gate.holder).toBe(owner);
  });

  it('runs a statement that waited for a transaction, and counts it until it ends', async () => {
    const gate = new ConnectionGate();
    const owner = {};
    await gate.acquire(owner);
    const log: string[] = [];
    const a = step(log, 'a');
    const statement = gate.statement(a.run);
    gate.release(owner);
    await settle();
    expect(log).toEqual(['a starts']);
    const next = {};
    let acquired = false;
    const acquiring = gate.acquire(next).then(() => (acquired = true));
    await settle();
    expect(acquired).toBe(false);
    a.finish();
    await statement;
    await acquiring;
    expect(gate.holder).toBe(next);
  });

  describe('bounded by DB_BUSY_TIMEOUT', () => {
    beforeEach(() => jest.useFakeTimers());
    afterEach(() => jest.useRealTimers());

    it('refuses, busy, each wait that lasts its bound behind a holder that never lets go, in the order they came', async () => {
      const gate = new ConnectionGate(10_000);
      await gate.acquire({});
      const outcomes: string[] = [];
      const waiting = (name: string, work: Promise<unknown>) =>
        work.then(
          () => outcomes.push(`${name} ran`),
          (error: Error) => outcomes.push(`${name}: ${error.name}`),
        );
      const first = waiting(
        'first',
        gate.statement(() => Promise.resolve()),
      );
      await jest.advanceTimersByTimeAsync(4000);
      const second = waiting('second', gate.acquire({}));
      // one timer serves the line, however long it is
      expect(jest.getTimerCount()).toBe(1);
      await jest.advanceTimersByTimeAsync(5999);
      expect(outcomes).toEqual([]);
      await jest.advanceTimersByTimeAsync(1);
      expect(outcomes).toEqual(['first: DatabaseBusyError']);
      await jest.advanceTimersByTimeAsync(3999);
      expect(outcomes).toHaveLength(1);
      await jest.advanceTimersByTimeAsync(1);
      await Promise.all([first, second]);
      expect(outcomes).toEqual([
        'first: DatabaseBusyError',
        'second: DatabaseBusyError',
      ]);
      expect(gate.waiting).toBe(0);
    });

    it('says what the wait was for, and for how long', async () => {
      const gate = new ConnectionGate(250);
      await gate.acquire({});
      const refused = expect(
        gate.statement(() => Promise.resolve()),
      ).rejects.toThrow("SQLite's connection did not come free within 250 ms");
      await jest.advanceTimersByTimeAsync(250);
      await refused;
    });

    it('lets in the statements behind a transaction refused at its bound', async () => {
      const gate = new ConnectionGate(10_000);
      const log: string[] = [];
      const a = step(log, 'a');
      const running = gate.statement(a.run);
      const refused = gate.acquire({}).catch((error: Error) => error.name);
      await jest.advanceTimersByTimeAsync(1000);
      const b = step(log, 'b');
      const behind = gate.statement(b.run);
      await jest.advanceTimersByTimeAsync(9000);
      expect(await refused).toBe('DatabaseBusyError');
      expect(log).toEqual(['a starts', 'b starts']);
      a.finish();
      b.finish();
      await Promise.all([running, behind]);
    });

    it('never refuses a wait that was let in before its bound', async () => {
      const gate = new ConnectionGate(10_000);
      const owner = {};
      await gate.acquire(owner);
      const statement = gate.statement(() => Promise.resolve('ran'));
      await jest.advanceTimersByTimeAsync(9000);
      gate.release(owner);
      await expect(statement).resolves.toBe('ran');
      await jest.advanceTimersByTimeAsync(20_000);
      expect(gate.busy).toBe(false);
    });
  });
});
