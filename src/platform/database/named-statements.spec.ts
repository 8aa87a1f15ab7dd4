import { NamedStatements } from './named-statements';

/** What PostgreSQL answers a prepared statement whose result's columns a migration changed. */
const stalePlan = () =>
  Object.assign(new Error('cached plan must not change result type'), {
    code: '0A000',
  });

/**
 * A connection as pg's client answers: each name prepared once, then executed; a name
 * prepared before `alter()` fails as PostgreSQL fails it; inside a transaction the failure
 * aborts it, so that the next statement is refused too (25P02).
 */
function preparingClient({ inTransaction = false } = {}) {
  const prepared = new Set<string>();
  const executed: string[] = [];
  let schema = 1;
  let preparedAt = new Map<string, number>();
  let aborted = false;
  const answer = (config: { name: string }): Promise<string> => {
    if (aborted) {
      return Promise.reject(
        Object.assign(new Error('current transaction is aborted'), {
          code: '25P02',
        }),
      );
    }
    if (!prepared.has(config.name)) {
      prepared.add(config.name);
      preparedAt.set(config.name, schema);
    }
    if (preparedAt.get(config.name) !== schema) {
      aborted = inTransaction;
      return Promise.reject(stalePlan());
    }
    executed.push(config.name);
    return Promise.resolve(`rows of ${config.name}`);
  };
  const client = {
    // pg's signature: query(config, values?, callback?), a callback in values' place too
    query: (config: unknown, values?: unknown, last?: unknown) => {
      const result = answer(config as { name: string });
      const given = typeof values === 'function' ? values : last;
      if (typeof given !== 'function') return result;
      const callback = given as (error: unknown, rows?: unknown) => void;
      void result.then(
        (rows) => callback(null, rows),
        (error) => callback(error),
      );
      return undefined;
    },
  };
  return {
    client,
    executed,
    alter: () => {
      schema += 1;
      preparedAt = new Map([...preparedAt].map(([name]) => [name, 1]));
    },
  };
}

function recordingClient() {
  const calls: unknown[][] = [];
  const client = {
    query: (...args: unknown[]) => {
      calls.push(args);
      return 'answer';
    },
  };
  return { client, calls };
}

describe('NamedStatements', () => {
  it('names a statement with parameters by its text, the same name each time', () => {
    const { client, calls } = recordingClient();
    new NamedStatements().nameStatementsOf(client);
    const callback = () => undefined;
    expect(client.query('SELECT $1', [1])).toBe('answer');
    client.query('SELECT $1', [2], callback);
    client.query('SELECT $1 + $2', [1, 2]);
    expect(calls).toEqual([
      [{ name: 'plant_store_1', text: 'SELECT $1', values: [1] }],
      [
        { name: 'plant_store_1', text: 'SELECT $1', values: [2] },
        expect.any(Function),
      ],
      [{ name: 'plant_store_2', text: 'SELECT $1 + $2', values: [1, 2] }],
    ]);
  });

  it('gives every connection of a data source the same names', () => {
    const statements = new NamedStatements();
    const first = recordingClient();
    const second = recordingClient();
    statements.nameStatementsOf(first.client);
    statements.nameStatementsOf(second.client);
    second.client.query('DELETE FROM plants WHERE id = $1', [1]);
    first.client.query('DELETE FROM plants WHERE id = $1', [2]);
    expect(first.calls[0][0]).toMatchObject({ name: 'plant_store_1' });
    expect(second.calls[0][0]).toMatchObject({ name: 'plant_store_1' });
  });

  it('leaves statements without parameters, and query objects, as they are', () => {
    const { client, calls } = recordingClient();
    new NamedStatements().nameStatementsOf(client);
    const config = { text: 'SELECT $1', values: [1] };
    client.query('BEGIN; SET LOCAL lock_timeout = 1');
    client.query('SELECT 1', []);
    client.query(config);
    expect(calls).toEqual([
      ['BEGIN; SET LOCAL lock_timeout = 1', undefined, undefined],
      ['SELECT 1', [], undefined],
      [config, undefined, undefined],
    ]);
  });

  it('wraps each connection once, however often the pool hands it out', () => {
    const { client, calls } = recordingClient();
    const pool = {
      connect: (
        callback: (
          error: undefined,
          client: unknown,
          release: () => void,
        ) => void,
      ) => callback(undefined, client, () => undefined),
    };
    new NamedStatements().nameStatementsOfPool(pool);
    const handedOut: unknown[] = [];
    pool.connect((_, given) => handedOut.push(given));
    const wrapped = client.query;
    pool.connect((_, given) => handedOut.push(given));
    expect(handedOut).toEqual([client, client]);
    expect(client.query).toBe(wrapped);
    client.query('SELECT $1', [1]);
    expect(calls).toEqual([
      [{ name: 'plant_store_1', text: 'SELECT $1', values: [1] }, undefined],
    ]);
  });

  it('passes a failure to connect on, touching no connection', () => {
    const failure = new Error('connection refused');
    const pool = {
      connect: (
        callback: (
          error: Error,
          client: undefined,
          release: () => void,
        ) => void,
      ) => callback(failure, undefined, () => undefined),
    };
    new NamedStatements().nameStatementsOfPool(pool);
    const outcomes: unknown[] = [];
    pool.connect((error, client) => outcomes.push(error, client));
    expect(outcomes).toEqual([failure, undefined]);
  });

  it('names no more than its cap of texts; the others run unnamed', () => {
    const { client, calls } = recordingClient();
    new NamedStatements(2).nameStatementsOf(client);
    for (const text of ['A $1', 'B $1', 'C $1', 'A $1'])
      client.query(text, [1]);
    expect(calls.map(([config]) => config)).toEqual([
      { name: 'plant_store_1', text: 'A $1', values: [1] },
      { name: 'plant_store_2', text: 'B $1', values: [1] },
      'C $1',
      { name: 'plant_store_1', text: 'A $1', values: [1] },
    ]);
  });

  describe('after a schema change made a prepared statement stale', () => {
    it('prepares it again under a new name and answers, outside a transaction', async () => {
      const statements = new NamedStatements();
      const { client, executed, alter } = preparingClient();
      statements.nameStatementsOf(client);
      await client.query('SELECT * FROM keys WHERE id = $1', [1]);
      alter();
      await expect(
        client.query('SELECT * FROM keys WHERE id = $1', [2]),
      ).resolves.toBe('rows of plant_store_2');
      expect(executed).toEqual(['plant_store_1', 'plant_store_2']);
    });

    it('answers a caller with a callback the same way', async () => {
      const statements = new NamedStatements();
      const { client, alter } = preparingClient();
      statements.nameStatementsOf(client);
      await client.query('SELECT * FROM keys WHERE id = $1', [1]);
      alter();
      const answer = await new Promise((resolve, reject) => {
        void client.query(
          'SELECT * FROM keys WHERE id = $1',
          [2],
          (error: Error | null, rows: unknown) =>
            error ? reject(error) : resolve(rows),
        );
      });
      expect(answer).toBe('rows of plant_store_2');
    });

    it('gives the stale error back inside a transaction, and the new name to its retry on any connection', async () => {
      const statements = new NamedStatements();
      const first = preparingClient({ inTransaction: true });
      const second = preparingClient();
      statements.nameStatementsOf(first.client);
      statements.nameStatementsOf(second.client);
      await first.client.query('SELECT * FROM keys WHERE id = $1', [1]);
      await second.client.query('SELECT * FROM keys WHERE id = $1', [1]);
      first.alter();
      second.alter();
      await expect(
        first.client.query('SELECT * FROM keys WHERE id = $1', [2]),
      ).rejects.toMatchObject({ code: '0A000' });
      // the other connection never meets the stale name again
      await expect(
        second.client.query('SELECT * FROM keys WHERE id = $1', [3]),
      ).resolves.toBe('rows of plant_store_2');
    });

    it('passes every other failure through untouched', async () => {
      const statements = new NamedStatements();
      const refused = Object.assign(new Error('no such table'), {
        code: '42P01',
      });
      const client = {
        query: (..._args: unknown[]): unknown => Promise.reject(refused),
      };
      statements.nameStatementsOf(client);
      await expect(client.query('SELECT $1', [1])).rejects.toBe(refused);
    });
  });
});
