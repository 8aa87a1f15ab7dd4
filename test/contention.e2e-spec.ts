import { request } from 'node:http';
import {
  startFixtureProcess,
  startFixtureProcesses,
  type FixtureProcess,
} from './helpers/fixture-process';
import { testLimit } from './helpers/pace';
import {
  databaseForProcesses,
  databaseReader,
  ENGINE,
} from './helpers/test-app';

/**
 * The bounds of the processes below, scaled by how busy the machine is as they start: the
 * rule under contention is what is tested, and a machine at load 18 once took past the
 * default bounds (7 × 408 on SQLite, 1,362 × 503 busy on PostgreSQL) with the rule kept.
 */
function boundsForThisMachine(): Record<string, string> {
  return {
    DB_BUSY_TIMEOUT: `${testLimit(10_000)}ms`,
    HEADERS_TIMEOUT: `${testLimit(10_000)}ms`,
    REQUEST_TIMEOUT: `${testLimit(30_000)}ms`,
  };
}

interface Answer {
  status: number;
  message?: string;
  retryAfter?: string;
}

/**
 * A POST from one of the loopback addresses 127.0.0.1 to 127.0.0.4, on a connection of its
 * own: a burst spread over them stays under MAX_CONNECTIONS_PER_ADDRESS (256 by default).
 */
function post(
  service: FixtureProcess,
  path: string,
  body: unknown,
  from: number,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = request(
      `${service.baseUrl}${path}`,
      {
        method: 'POST',
        agent: false,
        localAddress: `127.0.0.${1 + (from % 4)}`,
        headers: {
          Authorization: `Bearer ${service.token}`,
          'Content-Type': 'application/json',
        },
      },
      (response) => {
        let text = '';
        response.on('data', (chunk: Buffer) => (text += chunk.toString()));
        response.on('end', () =>
          resolve({
            status: response.statusCode!,
            message: (JSON.parse(text) as { message?: string }).message,
            retryAfter: response.headers['retry-after'],
          }),
        );
      },
    );
    sent.once('error', reject);
    sent.end(JSON.stringify(body));
  });
}

/** A subscription that wants every event, so that each transfer writes its event. */
async function subscribeToEveryEvent(service: FixtureProcess): Promise<void> {
  expect(
    (
      await post(
        service,
        '/webhooks/subscriptions',
        { url: 'http://127.0.0.1:9/every-event' },
        0,
      )
    ).status,
  ).toBe(201);
}

/** Asks for readiness every 50 ms until `until` settles: every status it answered. */
async function readinessDuring(
  service: FixtureProcess,
  until: Promise<unknown>,
): Promise<number[]> {
  let done = false;
  void until.finally(() => (done = true)).catch(() => undefined);
  const statuses: number[] = [];
  while (!done) {
    statuses.push((await fetch(`${service.baseUrl}/health/ready`)).status);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return statuses;
}

/**
 * `oneWay` transfers of one plant from `here` (a stock of 10) to `there` (none) and
 * `otherWay` back, all at once, spread over `services` in turn: every answer is the rule's
 * own, the stock adds up, each accepted transfer has its row and its event, readiness stays
 * 200 and no instance logs an outage or an error.
 */
async function transfersBothWays({
  services,
  database,
  path,
  here,
  there,
  oneWay,
  otherWay,
}: {
  services: FixtureProcess[];
  database: ReturnType<typeof databaseReader>;
  path: string;
  here: string;
  there: string;
  oneWay: number;
  otherWay: number;
}): Promise<void> {
  await database.query(
    'INSERT INTO fixture_greenhouse_stock (greenhouse, quantity) VALUES (?, 10), (?, 0)',
    [here, there],
  );
  const directions = [
    ...Array<[string, string]>(oneWay).fill([here, there]),
    ...Array<[string, string]>(otherWay).fill([there, here]),
  ];
  const burst = Promise.all(
    directions.map(([source, destination], index) =>
      post(
        services[index % services.length],
        path,
        { source, destination, quantity: 1 },
        index,
      ),
    ),
  );
  const readiness = await readinessDuring(services[0], burst);
  const answers = await burst;

  // each answer is the rule's own: moved, or refused for want of stock where it left from
  expect(
    answers.filter(
      (answer, index) =>
        answer.status !== 201 &&
        !(
          answer.status === 400 &&
          answer.message ===
            `greenhouse ${directions[index][0]} has 0, fewer than the 1 to move`
        ),
    ),
  ).toEqual([]);
  const moved = (source: string) =>
    answers.filter(
      ({ status }, index) => status === 201 && directions[index][0] === source,
    ).length;
  // a refusal for want of stock means the stock had all gone: 10 moved from here at least
  const refusedHere = answers.some(
    ({ status }, index) => status === 400 && directions[index][0] === here,
  );
  expect(moved(here)).toBeGreaterThanOrEqual(refusedHere ? 10 : 0);
  expect(
    await database.query<{ greenhouse: string; quantity: bigint }>(
      'SELECT greenhouse, quantity FROM fixture_greenhouse_stock WHERE greenhouse IN (?, ?) ORDER BY greenhouse',
      [here, there],
    ),
  ).toEqual([
    {
      greenhouse: here,
      quantity: BigInt(10 - moved(here) + moved(there)),
    },
    { greenhouse: there, quantity: BigInt(moved(here) - moved(there)) },
  ]);
  const accepted = moved(here) + moved(there);
  expect(
    await database.query(
      'SELECT id FROM fixture_transfers WHERE source IN (?, ?)',
      [here, there],
    ),
  ).toHaveLength(accepted);
  const events = await database.query<{ payload: string }>(
    "SELECT payload FROM events WHERE type = 'fixture-transfer.made'",
    [],
  );
  expect(
    events.filter(({ payload }) =>
      [here, there].includes(
        (JSON.parse(payload) as { source: string }).source,
      ),
    ),
  ).toHaveLength(accepted);
  expect(readiness.filter((status) => status !== 200)).toEqual([]);
  // the database's own state lines (an outage begun or ended), and any error line
  expect(
    services.flatMap((service) =>
      service
        .lines()
        .filter((line) => line.context === 'Database' || line.level >= 50)
        .map((line) => line.msg),
    ),
  ).toEqual([]);
}

// Contention is work, not an outage (docs/conventions.md, "Business rules"): rules under
// many concurrent requests, against a real process at its default settings, on each engine.
describe(`contended business rules over HTTP (${ENGINE})`, () => {
  let service: FixtureProcess;
  let database: ReturnType<typeof databaseReader>;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    const shared = await databaseForProcesses({ writable: true });
    database = shared.reader;
    cleanup = shared.drop;
    service = await startFixtureProcess('inventory', {
      DATABASE_URL: shared.url,
      // loopback receivers; the outage lines are warn lines
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      LOG_LEVEL: 'warn',
      ...boundsForThisMachine(),
    });
    await subscribeToEveryEvent(service);
  });

  afterAll(async () => {
    service?.child.kill('SIGTERM');
    await service?.exited;
    await cleanup?.();
  });

  /** The database's own state lines (an outage begun or ended), and any error line. */
  const outageLines = () =>
    service
      .lines()
      .filter((line) => line.context === 'Database' || line.level >= 50)
      .map((line) => line.msg);

  it.each([
    [
      'its rows locked (READ COMMITTED), with the rule, never 5xx',
      '/fixture-transfers',
      'A',
      'B',
    ],
    // the rule as a newcomer writes it: read both rows, check, write both, in request order,
    // so that transfers each way lock the rows in opposite orders; a row-lock wait fails fast
    // at SERIALIZABLE and the transaction runs again (docs/decisions.md, "Contention")
    [
      'at SERIALIZABLE, retried on conflicts, with the rule, never 5xx',
      '/fixture-transfers/serializable',
      'C',
      'D',
    ],
  ])(
    'answers 70 transfers both ways on a stock of 10, %s',
    (_, path, here, there) =>
      transfersBothWays({
        services: [service],
        database,
        path,
        here,
        there,
        oneWay: 50,
        otherWay: 20,
      }),
  );

  it('holds the cap of 100 subscriptions under 400 concurrent creates, never 5xx', async () => {
    const { count: before } = (
      await database.query<{ count: bigint }>(
        'SELECT COUNT(*) AS count FROM webhook_subscriptions WHERE removed_at IS NULL',
        [],
      )
    )[0];
    const burst = Promise.all(
      Array.from({ length: 400 }, (_, index) =>
        post(
          service,
          '/webhooks/subscriptions',
          { url: `http://127.0.0.1:9/receiver-${index}` },
          index,
        ),
      ),
    );
    const readiness = await readinessDuring(service, burst);
    const answers = await burst;

    const created = 100 - Number(before);
    expect(answers.filter(({ status }) => status === 201)).toHaveLength(
      created,
    );
    expect(
      answers.filter(
        ({ status, message }) =>
          status !== 201 &&
          !(
            status === 400 &&
            message ===
              'at most 100 subscriptions can be active; remove one first'
          ),
      ),
    ).toEqual([]);
    expect(
      await database.query(
        'SELECT id FROM webhook_subscriptions WHERE removed_at IS NULL',
        [],
      ),
    ).toHaveLength(100);
    expect(readiness.filter((status) => status !== 200)).toEqual([]);
    expect(outageLines()).toEqual([]);
  });
});

// The same rules from three instances on one database, as a deployment runs them: an
// instance's line of conflicted transactions is its own, and a row lock is the database's.
describe(`contended business rules across three instances (${ENGINE})`, () => {
  let services: FixtureProcess[];
  let stop: () => Promise<void>;
  let database: ReturnType<typeof databaseReader>;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    const shared = await databaseForProcesses({ writable: true });
    database = shared.reader;
    cleanup = shared.drop;
    ({ instances: services, stop } = await startFixtureProcesses(
      'inventory',
      3,
      {
        DATABASE_URL: shared.url,
        WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
        LOG_LEVEL: 'warn',
        ...boundsForThisMachine(),
      },
    ));
    await subscribeToEveryEvent(services[0]);
  });

  afterAll(async () => {
    await stop?.();
    await cleanup?.();
  });

  it.each([
    ['its rows locked (READ COMMITTED)', '/fixture-transfers', 'E', 'F'],
    ['at SERIALIZABLE', '/fixture-transfers/serializable', 'G', 'H'],
  ])(
    'answers 200 transfers both ways on a stock of 10, %s, never 5xx',
    (_, path, here, there) =>
      transfersBothWays({
        services,
        database,
        path,
        here,
        there,
        oneWay: 140,
        otherWay: 60,
      }),
  );
});
