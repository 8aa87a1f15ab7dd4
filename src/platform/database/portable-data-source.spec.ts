import { QueryFailedError } from 'typeorm';
import { isDatabaseBusy } from './database-errors';
import { PortableDataSource } from './portable-data-source';
import { transactionIsolationOf } from './transaction-context';

/** What PostgreSQL answers a transaction it gave up so that the others stay consistent. */
const conflict = (code: '40001' | '40P01') =>
  new QueryFailedError(
    'UPDATE stock SET quantity = $1',
    [],
    Object.assign(new Error('could not serialize access'), { code }),
  );

/**
 * The transaction's retry loop is the same on both engines (only PostgreSQL ever conflicts),
 * so it is tested here on SQLite in memory, with conflicts thrown by the work itself.
 */
describe('PortableDataSource.transaction', () => {
  let dataSource: PortableDataSource;

  beforeEach(async () => {
    dataSource = await new PortableDataSource({
      type: 'better-sqlite3',
      database: ':memory:',
      contention: { timeoutMs: 300, limit: 10 },
    }).initialize();
  });

  afterEach(() => dataSource.destroy());

  it('runs the work again after a serialization failure or a deadlock, until it succeeds', async () => {
    const failures = [conflict('40001'), conflict('40P01')];
    let attempts = 0;
    const result = await dataSource.transaction(() => {
      attempts += 1;
      const failure = failures.shift();
      return failure ? Promise.reject(failure) : Promise.resolve('done');
    });
    expect(result).toBe('done');
    expect(attempts).toBe(3);
  });

  it('runs conflicted transactions again one at a time, the oldest first, each until it commits', async () => {
    const attempts: string[] = [];
    const conflicting = (name: string) => {
      let failures = 2;
      return dataSource.transaction(async () => {
        attempts.push(name);
        // the others' first attempts come in while this one runs
        await new Promise((resolve) => setImmediate(resolve));
        if (failures === 0) return name;
        failures -= 1;
        throw conflict('40001');
      });
    };
    const first = conflicting('first');
    await new Promise((resolve) => setTimeout(resolve, 2));
    const second = conflicting('second');
    await new Promise((resolve) => setTimeout(resolve, 2));
    const third = conflicting('third');
    expect(await Promise.all([first, second, third])).toEqual([
      'first',
      'second',
      'third',
    ]);
    // after each one's first attempt, the retries in the order they came, the first of the
    // line trying until it commits
    const retries = attempts.filter(
      (name, index) => attempts.indexOf(name) !== index,
    );
    expect(retries).toEqual([
      'first',
      'first',
      'second',
      'second',
      'third',
      'third',
    ]);
  });

  it('gives up once the contention bound has passed, with the conflict, which is busy', async () => {
    // the machine's pace out of it: time moves only as the test says
    jest.useFakeTimers({
      doNotFake: ['nextTick', 'setImmediate', 'queueMicrotask'],
    });
    const starts: number[] = [];
    const started = Date.now();
    let outcome: unknown;
    const settled = dataSource
      .transaction(() => {
        starts.push(Date.now());
        return Promise.reject(conflict('40001'));
      })
      .catch((error: unknown) => (outcome = error));
    try {
      while (outcome === undefined) await jest.advanceTimersByTimeAsync(5);
      await settled;
    } finally {
      jest.useRealTimers();
    }
    expect(outcome).toBeInstanceOf(QueryFailedError);
    expect(isDatabaseBusy(outcome)).toBe(true);
    // pauses of at most 5 ms: five attempts at least fit in 300 ms
    expect(starts.length).toBeGreaterThanOrEqual(5);
    // no attempt starts once the bound (300 ms) has passed
    expect(starts.filter((at) => at >= started + 300)).toEqual([]);
  });

  it('runs any other failure once', async () => {
    let attempts = 0;
    await expect(
      dataSource.transaction(() => {
        attempts += 1;
        return Promise.reject(new Error('the rule refuses'));
      }),
    ).rejects.toThrow('the rule refuses');
    expect(attempts).toBe(1);
  });

  it('keeps the isolation level asked for, SERIALIZABLE by default, for the rules that depend on it', async () => {
    expect(transactionIsolationOf(dataSource)).toBeUndefined();
    expect(
      await dataSource.transaction(() =>
        Promise.resolve(transactionIsolationOf(dataSource)),
      ),
    ).toBe('SERIALIZABLE');
    expect(
      await dataSource.transaction('READ COMMITTED', () =>
        // a nested transaction runs at the level of the one it joins
        dataSource.transaction('SERIALIZABLE', () =>
          Promise.resolve(transactionIsolationOf(dataSource)),
        ),
      ),
    ).toBe('READ COMMITTED');
  });
});
