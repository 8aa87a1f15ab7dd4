import type { QueryRunner } from 'typeorm';
import {
  SERIALIZABLE_LOCK_WAIT_MS,
  TransactionRunner,
  type TransactionSource,
} from './transaction-runner';
import {
  activeTransaction,
  closeWith,
  ClosingUpdateChangedNothing,
} from './transaction-context';

/**
 * A PostgreSQL query runner as TypeORM's behaves where the runner relies on it: startTransaction
 * sends START TRANSACTION, then SET TRANSACTION ISOLATION LEVEL, through `query`. Each statement
 * is recorded as it is sent, and answered when the test says so (BEGIN) or at once (the rest).
 */
function postgresRunner() {
  const sent: string[] = [];
  const begin = Promise.withResolvers<unknown>();
  // a refused BEGIN that nothing sent (as under a mutant) must fail its test, not the process
  begin.promise.catch(() => undefined);
  const runner = {
    isTransactionActive: false,
    connect: jest.fn(() => Promise.resolve({})),
    release: jest.fn(() => Promise.resolve()),
    /** How the next statement of each verb is answered, when not at once. */
    answers: new Map<string, Promise<unknown>>(),
    query(sql: string): Promise<unknown> {
      sent.push(sql);
      if (sql.startsWith('START TRANSACTION ISOLATION LEVEL')) {
        return begin.promise;
      }
      const verb = sql.split(' ')[0];
      const answer = this.answers.get(verb) ?? Promise.resolve([]);
      this.answers.delete(verb);
      return answer;
    },
    async startTransaction(level?: string) {
      this.isTransactionActive = true;
      await this.query('START TRANSACTION');
      if (level) await this.query(`SET TRANSACTION ISOLATION LEVEL ${level}`);
    },
    async commitTransaction() {
      await this.query('COMMIT');
      this.isTransactionActive = false;
    },
    async rollbackTransaction() {
      await this.query('ROLLBACK');
      this.isTransactionActive = false;
    },
    get manager() {
      return { query: (sql: string) => this.query(sql) };
    },
  };
  return { sent, begin, runner, ...transactionsOn('postgres', runner) };
}

/** A TransactionRunner over a data source of `type` whose every query runner is `runner`. */
function transactionsOn(type: string, runner: object) {
  const source = {
    options: { type },
    createQueryRunner: () => runner as unknown as QueryRunner,
    writeCommitted: jest.fn(),
  } as unknown as TransactionSource;
  const transactions = new TransactionRunner(source, {
    limit: 10,
    timeoutMs: 1000,
  });
  return { source, transactions };
}

describe('TransactionRunner on PostgreSQL', () => {
  it("sends the transaction's first statement before BEGIN is answered, and COMMIT only after", async () => {
    const { sent, begin, transactions, runner } = postgresRunner();
    const firstStatement = Promise.withResolvers<void>();
    const done = transactions.run(
      'SERIALIZABLE',
      async (manager) => {
        await manager.query('INSERT INTO plants VALUES (1)');
        firstStatement.resolve();
      },
      false,
    );
    await firstStatement.promise;

    expect(sent).toEqual([
      `START TRANSACTION ISOLATION LEVEL SERIALIZABLE; SET LOCAL lock_timeout = ${SERIALIZABLE_LOCK_WAIT_MS}`,
      'INSERT INTO plants VALUES (1)',
    ]);
    expect(runner.connect).toHaveBeenCalledTimes(1);

    begin.resolve([]);
    await done;
    expect(sent.slice(2)).toEqual(['COMMIT']);
  });

  it('takes the connection before it sends BEGIN, so that BEGIN is its first statement', async () => {
    const { sent, begin, transactions, runner } = postgresRunner();
    const connected = Promise.withResolvers<object>();
    runner.connect.mockReturnValueOnce(connected.promise);
    const done = transactions.run(
      'READ COMMITTED',
      () => Promise.resolve(),
      false,
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent).toEqual([]);

    connected.resolve({});
    begin.resolve([]);
    await done;
    // READ COMMITTED keeps the server's lock wait
    expect(sent).toEqual([
      'START TRANSACTION ISOLATION LEVEL READ COMMITTED',
      'COMMIT',
    ]);
  });

  it('fails the transaction, rolled back and never committed, when BEGIN fails', async () => {
    const { sent, begin, source, transactions } = postgresRunner();
    const refused = new Error('the connection was lost');
    const done = transactions.run(
      'SERIALIZABLE',
      (manager) => manager.query('INSERT INTO plants VALUES (1)'),
      false,
    );
    begin.reject(refused);

    await expect(done).rejects.toBe(refused);
    expect(sent.slice(1)).toEqual([
      'INSERT INTO plants VALUES (1)',
      'ROLLBACK',
    ]);
    expect(source.writeCommitted).not.toHaveBeenCalled();
  });

  it('bounds the lock waits of REPEATABLE READ as of SERIALIZABLE', async () => {
    const { sent, begin, transactions } = postgresRunner();
    begin.resolve([]);
    await transactions.run('REPEATABLE READ', () => Promise.resolve(), false);
    expect(sent[0]).toBe(
      `START TRANSACTION ISOLATION LEVEL REPEATABLE READ; SET LOCAL lock_timeout = ${SERIALIZABLE_LOCK_WAIT_MS}`,
    );
  });

  it('lets an adopting transaction take the level of its first joiner, behind BEGIN, until a statement ran', async () => {
    const { sent, begin, transactions } = postgresRunner();
    begin.resolve([]);
    await transactions.run(
      'SERIALIZABLE',
      async (manager) => {
        await transactions.adopt(
          activeTransaction.getStore()!,
          'READ COMMITTED',
        );
        await manager.query('UPDATE plants SET name = $1');
      },
      true,
    );
    expect(sent.slice(1)).toEqual([
      'SET TRANSACTION ISOLATION LEVEL READ COMMITTED; SET LOCAL lock_timeout = DEFAULT',
      'UPDATE plants SET name = $1',
      'COMMIT',
    ]);

    const late = transactions.run(
      'SERIALIZABLE',
      async (manager) => {
        await manager.query('SELECT 1');
        await transactions.adopt(
          activeTransaction.getStore()!,
          'READ COMMITTED',
        );
      },
      true,
    );
    await expect(late).rejects.toThrow(
      'a READ COMMITTED transaction joined a transaction opened at SERIALIZABLE after statements ran in it, too late to change its level',
    );
  });

  describe('a transaction closed with an UPDATE (closeWith)', () => {
    /** A failed answer; one that nothing reads (as under a mutant) fails its test, not the process. */
    const failed = (error: Error) => {
      const answer = Promise.reject(error);
      answer.catch(() => undefined);
      return answer;
    };
    const update = {
      sql: 'UPDATE keys SET answer = $2 WHERE key = $1',
      parameters: ['k', 'a'],
    };
    const closedWith = (transactions: TransactionRunner) =>
      transactions.run(
        'SERIALIZABLE',
        async (manager) => {
          await manager.query('INSERT INTO plants VALUES (1)');
          closeWith(activeTransaction.getStore()!.dataSource, update);
          return 'done';
        },
        false,
      );

    it('sends the UPDATE, made to fail when it changes no row, and COMMIT behind it before either is answered', async () => {
      const { sent, begin, runner, source, transactions } = postgresRunner();
      begin.resolve([]);
      const closed = Promise.withResolvers<unknown>();
      runner.answers.set('WITH', closed.promise);
      const done = closedWith(transactions);
      await new Promise((resolve) => setImmediate(resolve));
      expect(sent.slice(1)).toEqual([
        'INSERT INTO plants VALUES (1)',
        'WITH "closing" AS (UPDATE keys SET answer = $2 WHERE key = $1 RETURNING 1) SELECT 1 / count(*)::int AS "closed" FROM "closing"',
        'COMMIT',
      ]);
      expect(source.writeCommitted).not.toHaveBeenCalled();

      closed.resolve([{ closed: 1 }]);
      await expect(done).resolves.toBe('done');
      expect(source.writeCommitted).toHaveBeenCalledTimes(1);
    });

    it('fails with ClosingUpdateChangedNothing when the UPDATE changed no row: the COMMIT behind it rolled back', async () => {
      const { sent, begin, runner, source, transactions } = postgresRunner();
      begin.resolve([]);
      runner.answers.set(
        'WITH',
        failed(Object.assign(new Error('division by zero'), { code: '22012' })),
      );
      await expect(closedWith(transactions)).rejects.toBeInstanceOf(
        ClosingUpdateChangedNothing,
      );
      // the server ended the transaction at COMMIT: nothing more is sent
      expect(sent.at(-1)).toBe('COMMIT');
      expect(source.writeCommitted).not.toHaveBeenCalled();
    });

    it("fails with the UPDATE's own failure, or COMMIT's", async () => {
      const lost = new Error('the connection was lost');
      const first = postgresRunner();
      first.begin.resolve([]);
      first.runner.answers.set('WITH', failed(lost));
      await expect(closedWith(first.transactions)).rejects.toBe(lost);

      const second = postgresRunner();
      second.begin.resolve([]);
      second.runner.answers.set('COMMIT', failed(lost));
      await expect(closedWith(second.transactions)).rejects.toBe(lost);
      expect(second.source.writeCommitted).not.toHaveBeenCalled();
    });

    it('refuses a second closing UPDATE, and one outside a transaction', async () => {
      const { begin, transactions, source } = postgresRunner();
      begin.resolve([]);
      await expect(
        transactions.run(
          'SERIALIZABLE',
          () => {
            closeWith(source, update);
            closeWith(source, update);
            return Promise.resolve();
          },
          false,
        ),
      ).rejects.toThrow(
        'a transaction closes with one UPDATE, and this one has one already',
      );
      expect(() => closeWith(source, update)).toThrow(
        'closeWith is for the statements of a transaction, and none runs here',
      );
    });
  });
});

describe('TransactionRunner on SQLite, closed with an UPDATE (closeWith)', () => {
  function sqliteRunner(affected: number) {
    const sent: string[] = [];
    const runner = {
      isTransactionActive: false,
      release: jest.fn(() => Promise.resolve()),
      query(sql: string) {
        sent.push(sql);
        return Promise.resolve(sql.startsWith('UPDATE') ? { affected } : {});
      },
      startTransaction() {
        this.isTransactionActive = true;
        sent.push('BEGIN');
        return Promise.resolve();
      },
      commitTransaction() {
        this.isTransactionActive = false;
        sent.push('COMMIT');
        return Promise.resolve();
      },
      rollbackTransaction() {
        this.isTransactionActive = false;
        sent.push('ROLLBACK');
        return Promise.resolve();
      },
      manager: {},
    };
    const { source, transactions } = transactionsOn('better-sqlite3', runner);
    const run = () =>
      transactions.run(
        'SERIALIZABLE',
        () => {
          closeWith(source, {
            sql: 'UPDATE keys SET answer = ?',
            parameters: ['a'],
          });
          return Promise.resolve('done');
        },
        false,
      );
    return { sent, run };
  }

  it('runs the UPDATE, then commits when it changed a row', async () => {
    const { sent, run } = sqliteRunner(1);
    await expect(run()).resolves.toBe('done');
    expect(sent).toEqual(['BEGIN', 'UPDATE keys SET answer = ?', 'COMMIT']);
  });

  it('rolls back and fails with ClosingUpdateChangedNothing when it changed none', async () => {
    const { sent, run } = sqliteRunner(0);
    await expect(run()).rejects.toBeInstanceOf(ClosingUpdateChangedNothing);
    expect(sent).toEqual(['BEGIN', 'UPDATE keys SET answer = ?', 'ROLLBACK']);
  });
});
