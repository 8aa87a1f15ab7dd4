import { randomInt } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestDatabase, describeWithPostgres } from './helpers/postgres';
import {
  runCliProcess,
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';
import {
  databaseForProcesses,
  databaseReader,
  ENGINE,
  makeTempFolder,
} from './helpers/test-app';
import { WebhookReceiver } from './helpers/webhook-receiver';

const SETTINGS = {
  LOG_LEVEL: 'warn',
  RATE_LIMIT_PER_TOKEN: '1000000000',
  RATE_LIMIT_PER_ADDRESS: '1000000000',
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOKS_RETRY_BASE: '50ms',
  WEBHOOKS_RETRY_MAX_DELAY: '100ms',
  WEBHOOKS_POLL_INTERVAL: '50ms',
  WEBHOOKS_PAUSE: '100ms',
  // far past the slow receiver's 1.5 s: an attempt that times out is rightly sent again (at
  // least once), and with 2 s a loaded machine took 555 ms to put one request on loopback
  WEBHOOKS_TIMEOUT: '10s',
};

interface Answer {
  kind: 'create' | 'read' | 'ready';
  id?: number;
  status: number;
  sentAt: number;
  retryAfter?: string | null;
  message?: string;
}

// docs/operations.md, "Moving to PostgreSQL": from the jest project's engine to the other,
// with two instances writing on the source and a receiver taking webhooks throughout
describeWithPostgres(`moving the store (${ENGINE} to the other engine)`, () => {
  let folder: ReturnType<typeof makeTempFolder>;
  let source: Awaited<ReturnType<typeof databaseForProcesses>>;
  let target: { url: string; drop: () => Promise<void> };
  let targetReader: ReturnType<typeof databaseReader>;
  const instances: ServiceProcess[] = [];

  beforeEach(async () => {
    folder = makeTempFolder();
    source = await databaseForProcesses({ writable: true });
    if (ENGINE === 'sqlite') {
      // the CLI migrates a database but makes none
      writeFileSync(source.url.slice('sqlite:'.length), '');
      const created = await createTestDatabase();
      target = created;
      targetReader = databaseReader('postgres', created.url);
    } else {
      const file = join(folder.path, 'moved.sqlite');
      target = { url: `sqlite:${file}`, drop: () => Promise.resolve() };
      targetReader = databaseReader('sqlite', file);
    }
  });

  afterEach(async () => {
    for (const instance of instances.splice(0)) {
      instance.child.kill('SIGTERM');
      await instance.exited;
    }
    await targetReader.close();
    await target.drop();
    await source.drop();
    folder.remove();
  });

  const cli = (url: string, ...args: string[]) =>
    runCliProcess(args, { DATABASE_URL: url, ...SETTINGS });

  const start = async (url: string, settings: Record<string, string> = {}) => {
    const instance = await startServiceProcess({
      DATABASE_URL: url,
      ...SETTINGS,
      ...settings,
    });
    instances.push(instance);
    return instance;
  };

  it('turns the source read-only within a second, loses no acknowledged write, and sends each event once in total', async () => {
    // slow once the move begins, so that deliveries are in flight when it fences the source
    let slow = false;
    const receiver = await WebhookReceiver.start((_request, response) => {
      setTimeout(() => response.end(), slow ? 1500 : 30);
    });
    expect(
      (await cli(source.url, 'webhooks', 'add', '--url', receiver.url)).status,
    ).toBe(0);
    const token = (await cli(source.url, 'tokens', 'create', '--name', 'mv'))
      .lastLine;
    const on = [await start(source.url), await start(source.url)];
    const answers: Answer[] = [];
    let going = true;
    const client = async (service: ServiceProcess) => {
      while (going) {
        const id = randomInt(1, 2 ** 47);
        const sentAt = Date.now();
        const created = await fetch(`${service.baseUrl}/plants`, {
          method: 'POST',
          headers: {
            Authorization: `Bearer ${token}`,
            'Content-Type': 'application/json',
          },
          body: JSON.stringify({ id, name: 'Fern' }),
        });
        answers.push({
          kind: 'create',
          id,
          status: created.status,
          sentAt,
          retryAfter: created.headers.get('retry-after'),
          message: ((await created.json()) as { message?: string }).message,
        });
        const read = await fetch(`${service.baseUrl}/plants?limit=1`, {
          headers: { Authorization: `Bearer ${token}` },
        });
        await read.arrayBuffer();
        answers.push({ kind: 'read', status: read.status, sentAt });
        const ready = await fetch(`${service.baseUrl}/health/ready`);
        await ready.arrayBuffer();
        answers.push({ kind: 'ready', status: ready.status, sentAt });
      }
    };
    const clients = on.flatMap((service) => [client(service), client(service)]);
    let moved: Awaited<ReturnType<typeof cli>>;
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      slow = true;
      moved = await cli(source.url, 'move', '--to', target.url);
      slow = false;
      await new Promise((resolve) => setTimeout(resolve, 300));
    } finally {
      going = false;
      await Promise.all(clients);
    }
    expect(moved.stderr).not.toContain('error:');
    expect(moved.lastLine).toMatch(
      /^moved \d+ tables and [\d,]+ rows to .*, checked; writes were refused for [\d.]+ s \([\d.]+ s of it waiting for deliveries and job ticks under way\)/,
    );
    expect(moved.status).toBe(0);

    const [move] = await source.reader.query<{
      started_at: unknown;
      outcome: string;
    }>('SELECT started_at, outcome FROM store_moves', []);
    expect(move.outcome).toBe('moved');
    const startedAt = new Date(
      typeof move.started_at === 'string'
        ? `${move.started_at.replace(' ', 'T')}Z`
        : (move.started_at as Date),
    ).getTime();

    const creates = answers.filter(({ kind }) => kind === 'create');
    const accepted = creates.filter(({ status }) => status === 200);
    const refused = creates.filter(({ status }) => status !== 200);
    expect(accepted.length).toBeGreaterThan(5);
    expect(refused.length).toBeGreaterThan(0);
    // refused as a move refuses: 503, when to come back, and why
    for (const answer of refused) {
      expect(answer).toMatchObject({ status: 503, retryAfter: '5' });
      expect(answer.message).toMatch(/moving to another database|has moved/);
    }
    // within about a second of the move's start, every instance refused writes
    const lastAccepted = Math.max(...accepted.map(({ sentAt }) => sentAt));
    expect(lastAccepted - startedAt).toBeLessThan(1500);
    // reads and readiness went on answering 200 throughout
    expect(
      answers
        .filter(({ kind }) => kind !== 'create')
        .filter(({ status }) => status !== 200),
    ).toEqual([]);

    // every acknowledged create is in the target, and no refused one
    const plants = new Set(
      (
        await targetReader.query<{ id: bigint }>('SELECT id FROM plants', [])
      ).map(({ id }) => Number(id)),
    );
    expect(plants).toEqual(new Set(accepted.map(({ id }) => id)));

    // the source is fenced: even a write no instance makes is refused
    await expect(
      // better-sqlite3 throws at once, pg rejects
      Promise.resolve().then(() =>
        source.reader.query(
          "INSERT INTO plants (id, name) VALUES (1, 'Stale')",
          [],
        ),
      ),
    ).rejects.toThrow(/the plant store has moved to another database/);

    // the target's instance delivers what the source still owed: each event once in total
    await start(target.url);
    const events = await targetReader.query<{ id: string }>(
      "SELECT id FROM events WHERE type = 'plant.added'",
      [],
    );
    expect(events.length).toBe(plants.size);
    const received = await receiver.waitFor(events.length, 30_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const ids = receiver.received.map(({ headers }) => headers['webhook-id']);
    // a webhook sent twice, with what the source recorded of its first attempt
    const twice = ids.filter((id, at) => ids.indexOf(id) !== at);
    const recorded = await source.reader.query<{ id: string }>(
      'SELECT id, status, attempts, last_error FROM webhook_deliveries',
      [],
    );
    expect({
      twice,
      recorded: recorded.filter(({ id }) => twice.includes(id)),
    }).toEqual({ twice: [], recorded: [] });
    expect(ids.length).toBe(received.length);
    const bodies = receiver.received.map(
      ({ body }) => (JSON.parse(body) as { id: number }).id,
    );
    expect(new Set(bodies)).toEqual(plants);
    await receiver.close();
  });

  it('abandons a move whose deliveries stay under way past --wait, and the source takes writes again', async () => {
    // a receiver that never answers holds its delivery's claim
    const receiver = await WebhookReceiver.start(() => undefined);
    expect(
      (await cli(source.url, 'webhooks', 'add', '--url', receiver.url)).status,
    ).toBe(0);
    const token = (await cli(source.url, 'tokens', 'create', '--name', 'mv'))
      .lastLine;
    const service = await start(source.url, { WEBHOOKS_TIMEOUT: '60s' });
    const create = (id: number) =>
      fetch(`${service.baseUrl}/plants`, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${token}`,
          'Content-Type': 'application/json',
        },
        body: JSON.stringify({ id, name: 'Fern' }),
      });
    expect((await create(1)).status).toBe(200);
    await receiver.waitFor(1);
    const abandoned = await cli(
      source.url,
      'move',
      '--to',
      target.url,
      '--wait',
      '1s',
    );
    expect(abandoned.stderr).toContain(
      'webhook deliveries or job ticks were still under way after 1 s (--wait): the move was abandoned and the source serves writes again',
    );
    expect(abandoned.status).toBe(1);
    const [move] = await source.reader.query<{ outcome: string }>(
      'SELECT outcome FROM store_moves',
      [],
    );
    expect(move.outcome).toBe('abandoned');
    // the instance looks again within a second, and takes writes
    let status = 0;
    const deadline = Date.now() + 5000;
    while (status !== 200 && Date.now() < deadline) {
      status = (await create(randomInt(2, 2 ** 47))).status;
      if (status !== 200)
        await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(status).toBe(200);
    await receiver.close();
  });
});
