import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { DataSource } from 'typeorm';
import { WebhookDelivery } from '../src/webhooks/webhook-delivery.entity';
import { WebhookSubscription } from '../src/webhooks/webhook-subscription.entity';
import { WebhookSubscriptionsService } from '../src/webhooks/webhook-subscriptions.service';
import { freePort } from './helpers/service-process';
import { startTestApp, type TestApp } from './helpers/test-app';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver';

const FAST_RETRIES = {
  WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
  WEBHOOKS_RETRY_BASE: '50ms',
  WEBHOOKS_RETRY_MAX_DELAY: '200ms',
  WEBHOOKS_POLL_INTERVAL: '50ms',
  WEBHOOKS_TIMEOUT: '500ms',
};

describe('plant-added webhooks', () => {
  let testApp: TestApp;
  let token: string;
  let subscriptions: WebhookSubscriptionsService;
  let receivers: WebhookReceiver[];
  let nextId = 1;

  beforeAll(async () => {
    testApp = await startTestApp({ env: FAST_RETRIES });
    token = await testApp.issueToken();
    subscriptions = testApp.app.get(WebhookSubscriptionsService);
  });

  afterAll(() => testApp.close());

  beforeEach(() => {
    receivers = [];
  });

  afterEach(async () => {
    for (const subscription of await subscriptions.listActive()) {
      await subscriptions.remove(subscription.id);
    }
    await Promise.all(receivers.map((receiver) => receiver.close()));
  });

  async function receiver(...args: Parameters<typeof WebhookReceiver.start>) {
    const started = await WebhookReceiver.start(...args);
    receivers.push(started);
    return started;
  }

  function createPlant(body: string) {
    return testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/json')
      .send(body);
  }

  const deliveries = () =>
    testApp.app.get(DataSource).getRepository(WebhookDelivery);

  it('delivers the NewPlant with its exact id, signed so that an independent verifier accepts it', async () => {
    const first = await receiver();
    const second = await receiver();
    const { secret } = await subscriptions.add(first.url);
    await subscriptions.add(second.url);

    await createPlant(
      '{"id":9007199254740993,"name":"Signed Sage","tag":"herb","extra":true}',
    ).expect(200);

    const [webhook] = await first.waitFor(1);
    expect(webhook.body).toBe(
      '{"id":9007199254740993,"name":"Signed Sage","tag":"herb"}',
    );
    expect(webhook.headers['content-type']).toBe('application/json');
    expect(webhook.headers['webhook-id']).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(
      Math.abs(
        Number(webhook.headers['webhook-timestamp']) - Date.now() / 1000,
      ),
    ).toBeLessThan(30);
    const headers = {
      'webhook-id': String(webhook.headers['webhook-id']),
      'webhook-timestamp': String(webhook.headers['webhook-timestamp']),
      'webhook-signature': String(webhook.headers['webhook-signature']),
    };
    expect(() =>
      new Webhook(secret).verify(webhook.body, headers),
    ).not.toThrow();
    expect(() =>
      new Webhook(secret).verify(webhook.body.replace('Sage', 'Rue'), headers),
    ).toThrow();

    const [other] = await second.waitFor(1);
    expect(other.body).toBe(webhook.body);
    expect(other.headers['webhook-id']).not.toBe(webhook.headers['webhook-id']);
    await eventually(
      () => deliveries().findBy({ plantId: 9007199254740993n }),
      (rows) =>
        rows.length === 2 &&
        rows.every((row) => row.status === 'delivered' && row.attempts === 1),
    );
  });

  it('retries a receiver that answers 500 twice, with the same webhook-id, until it answers 200', async () => {
    const flaky = await receiver((_req, res, index) => {
      res.statusCode = index < 2 ? 500 : 200;
      res.end();
    });
    await subscriptions.add(flaky.url);
    const id = nextId++;
    await createPlant(
      JSON.stringify({ id, name: 'Stubborn Succulent' }),
    ).expect(200);

    const attempts = await flaky.waitFor(3);
    expect(
      new Set(attempts.map((attempt) => attempt.headers['webhook-id'])).size,
    ).toBe(1);
    expect(attempts.map((attempt) => attempt.body)).toEqual(
      Array(3).fill(`{"id":${id},"name":"Stubborn Succulent"}`),
    );
    const [row] = await eventually(
      () => deliveries().findBy({ plantId: BigInt(id) }),
      (rows) => rows[0]?.status === 'delivered',
    );
    expect(row).toMatchObject({
      attempts: 3,
      lastStatusCode: 200,
      lastError: null,
    });
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(flaky.received).toHaveLength(3);
  });

  it('delivers to a receiver that is down at first once it comes up', async () => {
    const port = await freePort();
    await subscriptions.add(`http://127.0.0.1:${port}/hooks/plants`);
    const id = nextId++;
    await createPlant(JSON.stringify({ id, name: 'Patient Pothos' })).expect(
      200,
    );

    const [refused] = await eventually(
      () => deliveries().findBy({ plantId: BigInt(id) }),
      (rows) => rows[0]?.attempts >= 2,
    );
    expect(refused).toMatchObject({
      status: 'pending',
      lastError: 'connection refused',
    });

    const late = await receiver(undefined, port);
    const [webhook] = await late.waitFor(1);
    expect(webhook.body).toBe(`{"id":${id},"name":"Patient Pothos"}`);
    await eventually(
      () => deliveries().findOneBy({ plantId: BigInt(id) }),
      (row) => row?.status === 'delivered',
    );
  });

  it('sends nothing for a create that fails', async () => {
    const watcher = await receiver();
    await subscriptions.add(watcher.url);
    const id = nextId++;
    await createPlant(JSON.stringify({ id, name: 'Original' })).expect(200);
    await watcher.waitFor(1);
    const before = await deliveries().count();

    await createPlant(JSON.stringify({ id, name: 'Duplicate' })).expect(400);
    await createPlant(JSON.stringify({ id: nextId++, name: null })).expect(400);
    await createPlant('{"id": 1,').expect(400);

    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await deliveries().count()).toBe(before);
    expect(watcher.received).toHaveLength(1);
  });

  it('does not follow redirects', async () => {
    const target = await receiver();
    const redirecting = await receiver((_req, res) => {
      res.writeHead(307, { Location: target.url }).end();
    });
    await subscriptions.add(redirecting.url);
    const id = nextId++;
    await createPlant(JSON.stringify({ id, name: 'Wandering Jew' })).expect(
      200,
    );

    await redirecting.waitFor(2);
    const row = await deliveries().findOneByOrFail({ plantId: BigInt(id) });
    expect(row.lastStatusCode).toBe(307);
    expect(row.status).toBe('pending');
    expect(target.received).toHaveLength(0);
  });

  it('gives up on a receiver that does not answer within the timeout, and tries again', async () => {
    const silent = await receiver(() => undefined);
    await subscriptions.add(silent.url);
    const id = nextId++;
    await createPlant(JSON.stringify({ id, name: 'Quiet Cactus' })).expect(200);

    const [row] = await eventually(
      () => deliveries().findBy({ plantId: BigInt(id) }),
      (rows) => rows[0]?.attempts >= 1,
    );
    expect(row).toMatchObject({
      status: 'pending',
      lastError: 'no answer within 500 ms',
      lastStatusCode: null,
    });
    await silent.waitFor(2);
  });

  it('reads only the start of an answer: an endless 200 is still a success', async () => {
    let socketClosedEarly = false;
    const endless = await receiver((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      const timer = setInterval(() => res.write('x'.repeat(1024)), 5);
      res.on('close', () => {
        clearInterval(timer);
        socketClosedEarly = !res.writableEnded;
      });
    });
    await subscriptions.add(endless.url);
    const id = nextId++;
    await createPlant(JSON.stringify({ id, name: 'Chatty Chives' })).expect(
      200,
    );

    await eventually(
      () => deliveries().findOneBy({ plantId: BigInt(id) }),
      (row) => row?.status === 'delivered',
      5_000,
    );
    await eventually(
      () => socketClosedEarly,
      (closed) => closed,
      5_000,
    );
  });
});

/** Adds a plant with a fresh token, as a client would. */
async function addPlant(testApp: TestApp, plant: { id: number; name: string }) {
  const token = await testApp.issueToken();
  await testApp
    .http()
    .post('/plants')
    .set('Authorization', `Bearer ${token}`)
    .send(plant)
    .expect(200);
}

/** The outbox row of the only delivery for a plant, once `accept` holds for it. */
function deliveryOfPlant(
  testApp: TestApp,
  plantId: bigint,
  accept: (delivery: WebhookDelivery | null) => boolean,
) {
  return eventually(
    () =>
      testApp.app
        .get(DataSource)
        .getRepository(WebhookDelivery)
        .findOneBy({ plantId }),
    accept,
  );
}

describe('plant-added webhooks past the retry window', () => {
  it('marks a delivery failed once retries would pass WEBHOOKS_RETRY_WINDOW', async () => {
    const testApp = await startTestApp({
      env: { ...FAST_RETRIES, WEBHOOKS_RETRY_WINDOW: '400ms' },
    });
    const broken = await WebhookReceiver.start((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    try {
      await testApp.app.get(WebhookSubscriptionsService).add(broken.url);
      await addPlant(testApp, { id: 1, name: 'Doomed Dill' });
      const row = await deliveryOfPlant(
        testApp,
        1n,
        (delivery) => delivery?.status === 'failed',
      );
      expect(row?.attempts).toBeGreaterThanOrEqual(2);
      expect(row?.lastStatusCode).toBe(503);
      const attemptsSeen = broken.received.length;
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(broken.received).toHaveLength(attemptsSeen);
    } finally {
      await broken.close();
      await testApp.close();
    }
  });
});

describe('plant-added webhooks to private networks', () => {
  let testApp: TestApp;
  let inside: WebhookReceiver;

  beforeAll(async () => {
    testApp = await startTestApp({ env: { WEBHOOKS_POLL_INTERVAL: '50ms' } });
    inside = await WebhookReceiver.start();
  });

  afterAll(async () => {
    await inside.close();
    await testApp.close();
  });

  it.each([
    'http://127.0.0.1:8080/hook',
    'http://localhost/hook',
    'http://10.0.0.7/hook',
    'http://169.254.169.254/latest/meta-data',
    'http://[::1]/hook',
    'http://[fd00:ec2::254]/hook',
    'http://[::ffff:192.168.1.1]/hook',
    'http://100.100.100.200/hook',
  ])(
    'refuses to subscribe %s without WEBHOOKS_ALLOW_PRIVATE_NETWORKS',
    async (url) => {
      await expect(
        testApp.app.get(WebhookSubscriptionsService).add(url),
      ).rejects.toThrow(/WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true/);
    },
  );

  it('refuses to send to a private target that got into the database anyway', async () => {
    const repository = testApp.app
      .get(DataSource)
      .getRepository(WebhookSubscription);
    await repository.insert(
      repository.create({
        id: randomUUID(),
        url: inside.url,
        secret: 'whsec_c2VjcmV0',
        removedAt: null,
      }),
    );
    await addPlant(testApp, { id: 1, name: 'Sneaky' });
    const row = await deliveryOfPlant(
      testApp,
      1n,
      (delivery) => (delivery?.attempts ?? 0) >= 1,
    );
    expect(row?.lastError).toMatch(/127\.0\.0\.1 is not a public address/);
    expect(inside.received).toHaveLength(0);
  });
});
