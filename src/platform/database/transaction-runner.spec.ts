import type { QueryRunner } from 'typeorm';
import {
  SERIALIZABLE_LOCK_WAIT_MS,
  TransactionRunner,
  type TransactionSource,
} from './transaction-runner';
import { activeTransaction } from './transaction-context';

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
    query(sql: string): Promise<unknown> {
      sent.push(sql);
      return sql.startsWith('START TRANSACTION ISOLATION LEVEL')
        ? begin.promise
        : Promise.resolve([]);
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
  const source = {
    options: { type: 'postgres' },
    createQueryRunner: () => runner as unknown as QueryRunner,
    writeCommitted: jest.fn(),
  } as unknown as TransactionSource;
  const transactions = new TransactionRunner(source, {
    limit: 10,
    timeoutMs: 1000,
  });
  return { sent, begin, runner, source, transactions };
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
});
