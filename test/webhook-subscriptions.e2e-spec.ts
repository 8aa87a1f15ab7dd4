import { Webhook } from 'standardwebhooks';
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { DataSource } from 'typeorm';
import { isPublicAddress } from '../src/modules/webhooks/outbound-target';
import { transactionRunnerOf } from '../src/platform/database/transaction-context';
import { startTestApp, type TestApp } from './helpers/test-app';
import { WebhookReceiver } from './helpers/webhook-receiver';
import {
  MAX_ACTIVE_SUBSCRIPTIONS,
  WebhookSubscriptionsService,
} from '../src/modules/webhooks/webhook-subscriptions.service';

interface Subscription {
  id: string;
  url: string;
  events?: string[];
  createdAt: string;
  secret?: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe('webhook subscriptions over HTTP (/webhooks/subscriptions)', () => {
  let testApp: TestApp;
  let manager: string;
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    testApp = await startTestApp({
      env: {
        WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOKS_POLL_INTERVAL: '50ms',
      },
    });
    manager = await testApp.issueToken({ scopes: ['webhooks:manage'] });
    receiver = await WebhookReceiver.start();
  });

  afterAll(async () => {
    await receiver.close();
    await testApp.close();
  });

  const call = (method: 'get' | 'post' | 'delete', path: string) =>
    testApp.http()[method](path).set('Authorization', `Bearer ${manager}`);

  it('creates a subscription with 201, showing its whsec_ secret this once, and lists and reads it without it', async () => {
    const created = await call('post', '/webhooks/subscriptions')
      .send({ url: receiver.url, events: ['plant.added'] })
      .expect(201);
    const subscription = created.body as Subscription;
    expect(subscription).toEqual({
      id: expect.stringMatching(UUID),
      url: receiver.url,
      events: ['plant.added'],
      createdAt: expect.any(String),
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });

    const listed = await call('get', '/webhooks/subscriptions').expect(200);
    expect(listed.body).toContainEqual({
      id: subscription.id,
      url: receiver.url,
      events: ['plant.added'],
      createdAt: subscription.createdAt,
    });
    expect(listed.text).not.toContain('whsec_');
    const read = await call(
      'get',
      `/webhooks/subscriptions/${subscription.id}`,
    ).expect(200);
    expect(read.body).toEqual(listed.body[0]);

    // the subscription receives what it asked for, signed with that secret
    const token = await testApp.issueToken();
    await testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .send({ id: 4242, name: 'Hooked Heather' })
      .expect(200);
    const [webhook] = await receiver.waitFor(1);
    expect(webhook.body).toBe('{"id":4242,"name":"Hooked Heather"}');
    expect(() =>
      new Webhook(subscription.secret!).verify(webhook.body, {
        'webhook-id': String(webhook.headers['webhook-id']),
        'webhook-timestamp': String(webhook.headers['webhook-timestamp']),
        'webhook-signature': String(webhook.headers['webhook-signature']),
      }),
    ).not.toThrow();

    const deliveries = await call(
      'get',
      `/webhooks/subscriptions/${subscription.id}/deliveries?limit=5`,
    ).expect(200);
    expect(deliveries.body).toEqual([
      expect.objectContaining({
        id: webhook.headers['webhook-id'],
        eventType: 'plant.added',
        createdAt: expect.any(String),
      }),
    ]);

    const [{ secret: before }] = await testApp.query<{ secret: string }>(
      'SELECT secret FROM webhook_subscriptions WHERE id = ?',
      subscription.id,
    );
    expect(before).toMatch(/^whsec_/);
    await call('delete', `/webhooks/subscriptions/${subscription.id}`).expect(
      204,
    );
    // the row stays for its deliveries' history; the key that signed for it does not
    expect(
      await testApp.query(
        'SELECT secret FROM webhook_subscriptions WHERE id = ?',
        subscription.id,
      ),
    ).toEqual([{ secret: '' }]);
    await call('get', `/webhooks/subscriptions/${subscription.id}`).expect(404);
    await call('delete', `/webhooks/subscriptions/${subscription.id}`).expect(
      404,
    );
    const after = await call('get', '/webhooks/subscriptions').expect(200);
    expect((after.body as Subscription[]).map(({ id }) => id)).not.toContain(
      subscription.id,
    );
  });

  it('subscribes to every event type, those added later included, when events is absent', async () => {
    const created = await call('post', '/webhooks/subscriptions')
      .send({ url: `${receiver.url}/all` })
      .expect(201);
    expect(created.body).not.toHaveProperty('events');
    await call('delete', `/webhooks/subscriptions/${created.body.id}`).expect(
      204,
    );
  });

  it.each([
    [{}, 'url must be a string'],
    [{ url: 5 }, 'url must be a string'],
    [{ url: 'ftp://example.com/x' }, 'webhook URLs must use http or https'],
    [
      { url: 'https://example.com/x', events: [] },
      'events must name at least one event type; leave events out to receive every type, those added later included',
    ],
    [
      { url: 'https://example.com/x', events: null },
      'events must be a non-empty list',
    ],
    [
      { url: 'https://example.com/x', events: ['plant.eaten'] },
      'events must be a non-empty list of event types, each one of plant.added, plant.deleted',
    ],
    [
      {
        url: 'https://example.com/x',
        events: ['plant.added', 'plant.added'],
      },
      'each at most once',
    ],
  ])('answers 400 to %j, saying what is wrong', async (body, message) => {
    const before = await call('get', '/webhooks/subscriptions').expect(200);
    const response = await call('post', '/webhooks/subscriptions')
      .send(body)
      .expect(400);
    expect(response.body.message).toContain(message);
    const after = await call('get', '/webhooks/subscriptions').expect(200);
    expect(after.body).toEqual(before.body);
  });

  it('answers 400 to an id that is not a UUID, and 404 to one that names no subscription', async () => {
    const bad = await call('get', '/webhooks/subscriptions/42').expect(400);
    expect(bad.body.message).toBe('id in the path must be a UUID, got "42"');
    await call(
      'get',
      '/webhooks/subscriptions/00000000-0000-4000-8000-000000000000/deliveries',
    ).expect(404);
    const limit = await call(
      'get',
      '/webhooks/subscriptions/00000000-0000-4000-8000-000000000000/deliveries?limit=0',
    ).expect(400);
    expect(limit.body.message).toBe(
      'limit must be an integer between 1 and 100',
    );
  });

  it(`keeps at most ${MAX_ACTIVE_SUBSCRIPTIONS} subscriptions active, as the document's maxItems says`, async () => {
    const active = (await call('get', '/webhooks/subscriptions').expect(200))
      .body as Subscription[];
    const created: string[] = [];
    for (let i = active.length; i < MAX_ACTIVE_SUBSCRIPTIONS; i += 1) {
      const response = await call('post', '/webhooks/subscriptions')
        .send({ url: `${receiver.url}/many/${i}` })
        .expect(201);
      created.push((response.body as Subscription).id);
    }
    const refused = await call('post', '/webhooks/subscriptions')
      .send({ url: `${receiver.url}/one-too-many` })
      .expect(400);
    expect(refused.body.message).toBe(
      `at most ${MAX_ACTIVE_SUBSCRIPTIONS} subscriptions can be active; remove one first`,
    );
    const listed = await call('get', '/webhooks/subscriptions').expect(200);
    expect(listed.body).toHaveLength(MAX_ACTIVE_SUBSCRIPTIONS);
    for (const id of created) {
      await call('delete', `/webhooks/subscriptions/${id}`).expect(204);
    }
    await call('post', '/webhooks/subscriptions')
      .send({ url: `${receiver.url}/room-again` })
      .expect(201);
  });

  it(`never passes ${MAX_ACTIVE_SUBSCRIPTIONS} active subscriptions, however many creates run at once`, async () => {
    const before = (await call('get', '/webhooks/subscriptions').expect(200))
      .body as Subscription[];
    const racing = 150;
    const statuses = await Promise.all(
      Array.from(
        { length: racing },
        async (_, i) =>
          (
            await call('post', '/webhooks/subscriptions').send({
              url: `${receiver.url}/racing/${i}`,
            })
          ).status,
      ),
    );
    const room = MAX_ACTIVE_SUBSCRIPTIONS - before.length;
    expect(statuses.filter((status) => status === 201)).toHaveLength(room);
    expect(statuses.filter((status) => status === 400)).toHaveLength(
      racing - room,
    );
    const active = await testApp.query<{ slot: bigint }>(
      'SELECT slot FROM webhook_subscriptions WHERE removed_at IS NULL ORDER BY slot',
    );
    expect(active.map(({ slot }) => Number(slot))).toEqual(
      Array.from({ length: MAX_ACTIVE_SUBSCRIPTIONS }, (_, i) => i + 1),
    );
    const listed = await call('get', '/webhooks/subscriptions').expect(200);
    expect(listed.body).toHaveLength(MAX_ACTIVE_SUBSCRIPTIONS);
    for (const { id } of (listed.body as Subscription[]).slice(before.length)) {
      await call('delete', `/webhooks/subscriptions/${id}`).expect(204);
    }
  });

  it('refuses an active subscription without a slot, or one past the cap, in the database itself', async () => {
    for (const slot of ['NULL', String(MAX_ACTIVE_SUBSCRIPTIONS + 1), '0']) {
      await expect(
        testApp.app
          .get(DataSource)
          .query(
            `INSERT INTO webhook_subscriptions (id, url, secret, slot) VALUES ('00000000-0000-4000-8000-00000000000${slot.length}', 'https://example.com/', 'whsec_x', ${slot})`,
          ),
      ).rejects.toThrow(/CHK_webhook_subscriptions_(slot|active_has_slot)/);
    }
  });

  it('needs the scope webhooks:manage, which the default scopes do not include', async () => {
    const plantsOnly = await testApp.issueToken({
      scopes: ['plants:read', 'plants:write'],
    });
    const refused = await testApp
      .http()
      .get('/webhooks/subscriptions')
      .set('Authorization', `Bearer ${plantsOnly}`)
      .expect(403);
    expect(refused.headers['www-authenticate']).toContain(
      'scope="webhooks:manage"',
    );
    await testApp.http().get('/webhooks/subscriptions').expect(401);
  });
});

describe('webhook subscriptions over HTTP, to private networks', () => {
  let testApp: TestApp;

  beforeAll(async () => {
    testApp = await startTestApp();
  });

  afterAll(() => testApp.close());

  it('refuses a private target with 400 unless WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true', async () => {
    const token = await testApp.issueToken({ scopes: ['webhooks:manage'] });
    const response = await testApp
      .http()
      .post('/webhooks/subscriptions')
      .set('Authorization', `Bearer ${token}`)
      .send({ url: 'http://169.254.169.254/latest/meta-data' })
      .expect(400);
    expect(response.body.message).toBe(
      '169.254.169.254 is not a public address; set WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true to allow it',
    );
  });

  it("refuses names that lead to the machine itself: localhost with its final dot, the host's own name", async () => {
    const token = await testApp.issueToken({ scopes: ['webhooks:manage'] });
    const subscribe = (url: string) =>
      testApp
        .http()
        .post('/webhooks/subscriptions')
        .set('Authorization', `Bearer ${token}`)
        .send({ url });
    for (const host of ['localhost.', 'hooks.localhost.']) {
      const refused = await subscribe(`https://${host}/hook`).expect(400);
      expect(refused.body.message).toBe(
        `${host.slice(0, -1)} is a loopback name; set WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true to allow it`,
      );
    }
    // the machine's own name resolves to one of its addresses, none of them public here
    const own = hostname();
    const addresses = await lookup(own, { all: true });
    expect(addresses.length).toBeGreaterThan(0);
    expect(addresses.every(({ address }) => isPublicAddress(address))).toBe(
      false,
    );
    const refused = await subscribe(`https://${own}/hook`).expect(400);
    expect(refused.body.message).toBe(
      `${own} resolves to an address that is not public; set WEBHOOKS_ALLOW_PRIVATE_NETWORKS=true to allow it`,
    );
  });

  it('refuses a URL with control characters, which would reach a terminal through webhooks list', async () => {
    const token = await testApp.issueToken({ scopes: ['webhooks:manage'] });
    const url = 'https://hooks.example.com/\u001b]0;owned\u0007\r\nX';
    const refused = await testApp
      .http()
      .post('/webhooks/subscriptions')
      .set('Authorization', `Bearer ${token}`)
      .send({ url })
      .expect(400);
    expect(refused.body.message).toBe(
      'url must not contain control or invisible characters (a line break, an escape, a bidirectional override), got U+001B at character 27',
    );
  });
});

describe('a subscription create sent with an Idempotency-Key', () => {
  it("resolves the URL's name once, before its transaction opens, holding no connection meanwhile", async () => {
    const testApp = await startTestApp();
    try {
      const dataSource = testApp.app.get(DataSource);
      const service = testApp.app.get(WebhookSubscriptionsService);
      const inTransaction: boolean[] = [];
      // the name resolves to a public address, wherever the test runs
      jest.spyOn(service, 'urlProblem').mockImplementation(() => {
        inTransaction.push(transactionRunnerOf(dataSource) !== undefined);
        return Promise.resolve(undefined);
      });
      const token = await testApp.issueToken({ scopes: ['webhooks:manage'] });
      await testApp
        .http()
        .post('/webhooks/subscriptions')
        .set('Authorization', `Bearer ${token}`)
        .set('Idempotency-Key', 'resolved-first')
        .send({ url: 'https://hooks.example.com/plants' })
        .expect(201);
      expect(inTransaction).toEqual([false]);
    } finally {
      jest.restoreAllMocks();
      await testApp.close();
    }
  });
});
