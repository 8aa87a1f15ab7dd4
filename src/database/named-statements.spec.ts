import { NamedStatements } from './named-statements';

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
      [{ name: 'plant_store_1', text: 'SELECT $1', values: [1] }, undefined],
      [{ name: 'plant_store_1', text: 'SELECT $1', values: [2] }, callback],
      [
        { name: 'plant_store_2', text: 'SELECT $1 + $2', values: [1, 2] },
        undefined,
      ],
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
});
