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
});
