import { createTestDatabase, describeWithPostgres } from './helpers/postgres';
import {
  runCliProcess,
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';
import { WebhookReceiver } from './helpers/webhook-receiver';

describeWithPostgres('two service instances on one PostgreSQL database', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let instances: ServiceProcess[];
  let receiver: WebhookReceiver;
  let token: string;

  beforeAll(async () => {
    database = await createTestDatabase();
    receiver = await WebhookReceiver.start();
    const env = {
      DATABASE_URL: database.url,
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      // both dispatchers poll often, so that they race for the same deliveries
      WEBHOOKS_POLL_INTERVAL: '20ms',
    };
    token = runCliProcess(
      ['tokens', 'create', '--name', 'multi'],
      env,
    ).lastLine;
    expect(
      runCliProcess(['webhooks', 'add', '--url', receiver.url], env).status,
    ).toBe(0);
    // one after the other: the first applies the migrations
    instances = [
      await startServiceProcess(env),
      await startServiceProcess(env),
    ];
  });

  afterAll(async () => {
    for (const instance of instances ?? []) instance.child.kill('SIGTERM');
    await Promise.all((instances ?? []).map((instance) => instance.exited));
    await receiver.close();
    await database.drop();
  });

  const call = (
    instance: ServiceProcess,
    method: string,
    path: string,
    body?: string,
  ) =>
    fetch(`${instance.baseUrl}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
      },
      body,
    });

  it('gives exactly one 200 per id when both instances get the same creates at once', async () => {
    const ids = Array.from(
      { length: 40 },
      (_, i) => 9_007_199_254_740_993n + BigInt(i),
    );
    const outcomes = await Promise.all(
      ids.map(async (id) => {
        const body = `{"id":${id},"name":"Shared ${id}"}`;
        const statuses = await Promise.all(
          instances.map((instance) =>
            call(instance, 'POST', '/plants', body).then((r) => r.status),
          ),
        );
        return statuses.sort().join(',');
      }),
    );
    expect(outcomes).toEqual(Array(40).fill('200,400'));
  });

  it('reads and deletes across instances', async () => {
    const [a, b] = instances;
    expect(
      (await call(a, 'POST', '/plants', '{"id":1,"name":"Roaming"}')).status,
    ).toBe(200);
    expect(await (await call(b, 'GET', '/plants/1')).text()).toBe(
      '{"id":1,"name":"Roaming"}',
    );
    expect((await call(b, 'DELETE', '/plants/1')).status).toBe(204);
    expect((await call(a, 'GET', '/plants/1')).status).toBe(404);
    expect((await call(a, 'DELETE', '/plants/1')).status).toBe(404);
  });

  it('sends each delivery once, though both dispatchers see it', async () => {
    // 40 shared creates, 1 roaming create and its delete, one subscription to every event
    const received = await receiver.waitFor(42, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(receiver.received).toHaveLength(42);
    const ids = received.map((webhook) => webhook.headers['webhook-id']);
    expect(new Set(ids).size).toBe(42);
    const deleted = received.filter(
      (webhook) => webhook.headers['webhook-event-type'] === 'plant.deleted',
    );
    expect(deleted.map((webhook) => webhook.body)).toEqual([
      '{"id":1,"name":"Roaming"}',
    ]);
  });
});
