import { createHash } from 'node:crypto';
import { connect } from 'node:net';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { DataSource } from 'typeorm';
import { TokensService } from '../src/platform/auth/tokens.service';
import { removedSubscriptionKeyMessage } from '../src/modules/webhooks/webhook-subscriptions.service';
import { IdentityProvider } from './helpers/identity-provider';
import { portOf, sendRaw } from './helpers/raw-http';
import { startTestApp, type TestApp } from './helpers/test-app';
import {
  IN_FLIGHT_MESSAGE,
  KEY_REUSED_MESSAGE,
  TAKEN_OVER_MESSAGE,
} from '../src/platform/idempotency/idempotency.runner';
import {
  IdempotencyStore,
  type Claim,
} from '../src/platform/idempotency/idempotency.store';

/** A receiver nobody listens on: subscriptions to it make the service write its events. */
const NOWHERE = 'http://127.0.0.1:9/hooks';

describe('Idempotency-Key on creates', () => {
  let testApp: TestApp;
  let token: string;
  let otherToken: string;
  let nextId = 1000;

  beforeAll(async () => {
    testApp = await startTestApp({
      env: { WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true' },
    });
    token = await testApp.issueToken();
    otherToken = await testApp.issueToken();
    // with a subscriber, every plant.added is written to the outbox: a second one would show
    await testApp
      .http()
      .post('/webhooks/subscriptions')
      .set('Authorization', `Bearer ${token}`)
      .send({ url: NOWHERE, events: ['plant.added'] })
      .expect(201);
  });

  afterAll(async () => {
    await testApp.close();
  });

  const newPlant = (name = 'Fern') => ({ id: nextId++, name });

  function post(
    body: unknown,
    key?: string,
    { bearer = token, path = '/plants' } = {},
  ) {
    const call = testApp
      .http()
      .post(path)
      .set('Authorization', `Bearer ${bearer}`)
      .set('Content-Type', 'application/json');
    if (key !== undefined) call.set('Idempotency-Key', key);
    return call.send(typeof body === 'string' ? body : JSON.stringify(body));
  }

  async function plantsWithId(id: number) {
    const [{ n }] = await testApp.query<{ n: bigint }>(
      'SELECT count(*) AS n FROM plants WHERE id = ?',
      BigInt(id),
    );
    return Number(n);
  }

  async function addedEventsFor(id: number) {
    const rows = await testApp.query<{ payload: string }>(
      "SELECT payload FROM events WHERE type = 'plant.added'",
    );
    return rows.filter(
      ({ payload }) =>
        Number((JSON.parse(payload) as { id: unknown }).id) === id,
    ).length;
  }

  async function storedKeys(key: string) {
    return testApp.query<{ status: number | bigint | null }>(
      'SELECT status FROM idempotency_keys WHERE idempotency_key = ?',
      key,
    );
  }

  describe('without the header', () => {
    it('creates as before, with no Idempotent-Replayed header and no key stored', async () => {
      const plant = newPlant();
      const first = await post(plant);
      expect(first.status).toBe(200);
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      const again = await post(plant);
      expect(again.status).toBe(400);
      expect(again.body).toEqual({
        error: 400,
        message: `a plant with id ${plant.id} already exists`,
      });
      const [{ n }] = await testApp.query<{ n: bigint }>(
        'SELECT count(*) AS n FROM idempotency_keys',
      );
      expect(n).toBe(0n);
    });
  });

  describe('a repeat with the same key and request', () => {
    it('gets the first answer byte for byte, marked replayed, and creates nothing more', async () => {
      const plant = newPlant('Monstera');
      const first = await post(plant, 'repeat-1');
      expect(first.status).toBe(200);
      expect(first.body).toEqual({ id: plant.id, name: 'Monstera' });
      expect(first.headers['idempotent-replayed']).toBeUndefined();
      for (let repeat = 0; repeat < 3; repeat += 1) {
        const again = await post(plant, 'repeat-1');
        expect(again.status).toBe(200);
        expect(again.text).toBe(first.text);
        expect(again.headers['content-type']).toBe(
          first.headers['content-type'],
        );
        expect(again.headers['idempotent-replayed']).toBe('true');
      }
      expect(await plantsWithId(plant.id)).toBe(1);
      expect(await addedEventsFor(plant.id)).toBe(1);
    });

    it('gets a stored refusal again, even once the request would succeed', async () => {
      const plant = newPlant();
      await post(plant).expect(200);
      const refused = await post(plant, 'refused-1');
      expect(refused.status).toBe(400);
      expect(refused.body.message).toBe(
        `a plant with id ${plant.id} already exists`,
      );
      await testApp
        .http()
        .delete(`/plants/${plant.id}`)
        .set('Authorization', `Bearer ${token}`)
        .expect(204);
      const again = await post(plant, 'refused-1');
      expect(again.status).toBe(400);
      expect(again.text).toBe(refused.text);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(await plantsWithId(plant.id)).toBe(0);
    });

    it('stores no validation refusal: the request never ran, so the key may carry the corrected request', async () => {
      const id = nextId++;
      const first = await post({ id }, 'invalid-1');
      expect(first.status).toBe(400);
      expect(first.body).toEqual({ error: 400, message: 'name is required' });
      const again = await post({ id }, 'invalid-1');
      expect(again.text).toBe(first.text);
      expect(again.headers['idempotent-replayed']).toBeUndefined();
      expect(await storedKeys('invalid-1')).toEqual([]);
      expect(await plantsWithId(id)).toBe(0);
      const corrected = await post({ id, name: 'Fixed Fern' }, 'invalid-1');
      expect(corrected.status).toBe(200);
      expect(corrected.headers['idempotent-replayed']).toBeUndefined();
      expect(await plantsWithId(id)).toBe(1);
    });

    it('is answered once a client dropped its connection before reading the answer', async () => {
      const plant = newPlant();
      const body = JSON.stringify(plant);
      const port = await portOf(testApp.server);
      await new Promise<void>((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => {
          socket.end(
            `POST /plants HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
              `Content-Type: application/json\r\nIdempotency-Key: dropped-1\r\n` +
              `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
            () => {
              socket.destroy();
              resolve();
            },
          );
        });
        socket.on('error', reject);
      });
      // the retry either finds the first still running, or gets its answer
      let retry;
      for (;;) {
        retry = await post(plant, 'dropped-1');
        if (retry.status !== 409) break;
        expect(retry.headers['retry-after']).toBe('1');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(retry.status).toBe(200);
      expect(retry.body).toEqual({ id: plant.id, name: 'Fern' });
      expect(await plantsWithId(plant.id)).toBe(1);
      expect(await addedEventsFor(plant.id)).toBe(1);
    });

    it('works for webhook subscriptions: the same subscription, with its secret, and no second one', async () => {
      const subscription = { url: `${NOWHERE}/keyed`, events: ['plant.added'] };
      const path = '/webhooks/subscriptions';
      const first = await post(subscription, 'subscription-1', { path });
      expect(first.status).toBe(201);
      const again = await post(subscription, 'subscription-1', { path });
      expect(again.status).toBe(201);
      expect(again.text).toBe(first.text);
      expect(again.headers['idempotent-replayed']).toBe('true');
      const rows = await testApp.query(
        'SELECT id FROM webhook_subscriptions WHERE url = ?',
        subscription.url,
      );
      expect(rows).toHaveLength(1);
    });

    it('answers a repeat after the subscription was removed with 400, never its erased secret, which leaves the stored answer too', async () => {
      const subscription = {
        url: `${NOWHERE}/removed`,
        events: ['plant.added'],
      };
      const path = '/webhooks/subscriptions';
      const first = await post(subscription, 'subscription-removed', { path });
      expect(first.status).toBe(201);
      const { id, secret } = first.body as { id: string; secret: string };
      expect(secret).toMatch(/^whsec_/);
      await testApp
        .http()
        .delete(`${path}/${id}`)
        .set('Authorization', `Bearer ${token}`)
        .expect(204);
      const again = await post(subscription, 'subscription-removed', { path });
      expect(again.status).toBe(400);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body).toEqual({
        error: 400,
        message: removedSubscriptionKeyMessage(id),
      });
      expect(again.text).not.toContain(secret);
      const stored = await testApp.query<{ body: string }>(
        'SELECT body FROM idempotency_keys WHERE idempotency_key = ?',
        'subscription-removed',
      );
      expect(stored).toHaveLength(1);
      expect(stored[0].body).not.toContain(secret);
    });
  });

  describe('the same key for another request', () => {
    it('is refused with 400 for another body, path or method, and nothing is created', async () => {
      const plant = newPlant();
      await post(plant, 'reused-1').expect(200);
      const otherBody = newPlant();
      const refusals = [
        await post(otherBody, 'reused-1'),
        // the same JSON value, other bytes
        await post(`{"name":"Fern","id":${plant.id}}`, 'reused-1'),
        await post({ url: NOWHERE }, 'reused-1', {
          path: '/webhooks/subscriptions',
        }),
      ];
      for (const refused of refusals) {
        expect(refused.status).toBe(400);
        expect(refused.body).toEqual({
          error: 400,
          message: KEY_REUSED_MESSAGE,
        });
        expect(refused.headers['idempotent-replayed']).toBeUndefined();
      }
      expect(await plantsWithId(otherBody.id)).toBe(0);
    });

    it('is another key for another token: one token never gets the answers of another', async () => {
      const plant = newPlant();
      const first = await post(plant, 'shared-1');
      expect(first.status).toBe(200);
      // the other token's request with that key runs: here, it finds the plant taken
      const other = await post(plant, 'shared-1', { bearer: otherToken });
      expect(other.status).toBe(400);
      expect(other.body.message).toBe(
        `a plant with id ${plant.id} already exists`,
      );
      expect(other.headers['idempotent-replayed']).toBeUndefined();
      // and with a body of its own, the key is its own
      const own = newPlant();
      const created = await post(own, 'shared-1', { bearer: otherToken });
      expect(created.status).toBe(400);
      expect(created.body.message).toBe(KEY_REUSED_MESSAGE);
      const fresh = await post(own, 'shared-2', { bearer: otherToken });
      expect(fresh.status).toBe(200);
      expect(await storedKeys('shared-1')).toHaveLength(2);
    });
  });

  describe('a malformed key', () => {
    it.each([
      ['empty', '', 'Idempotency-Key must be 1 to 255 characters long, got 0'],
      [
        'too long',
        'k'.repeat(256),
        'Idempotency-Key must be 1 to 255 characters long, got 256',
      ],
      [
        'with a space',
        'two words',
        'Idempotency-Key must be visible ASCII characters (no spaces), got " " at character 4',
      ],
    ])(
      '%s: 400 saying what is wrong, and nothing is created',
      async (_, key, message) => {
        const plant = newPlant();
        const refused = await post(plant, key);
        expect(refused.status).toBe(400);
        expect(refused.body).toEqual({ error: 400, message });
        expect(await plantsWithId(plant.id)).toBe(0);
      },
    );

    it('not ASCII, or sent twice: 400, and nothing is created', async () => {
      const port = await portOf(testApp.server);
      const plant = newPlant();
      const send = (headers: Record<string, string | string[]>) =>
        sendRaw(port, {
          path: '/plants',
          headers: {
            Authorization: `Bearer ${token}`,
            'Content-Type': 'application/json',
            ...headers,
          },
          body: JSON.stringify(plant),
        });
      const latin = await send({ 'Idempotency-Key': 'caf\u00e9' });
      expect(latin.status).toBe(400);
      expect(JSON.parse(latin.text)).toEqual({
        error: 400,
        // the header's bytes, as HTTP reads them: one character per byte
        message: expect.stringMatching(
          /^Idempotency-Key must be visible ASCII characters \(no spaces\), got ".+" at character 4$/,
        ),
      });
      const twice = await send({ 'Idempotency-Key': ['a-1', 'a-2'] });
      expect(twice.status).toBe(400);
      expect(JSON.parse(twice.text)).toEqual({
        error: 400,
        message: 'send one Idempotency-Key header, got 2',
      });
      expect(await plantsWithId(plant.id)).toBe(0);
    });
  });

  describe('concurrent repeats', () => {
    it('50 at once with one key: one create, the rest replayed or told to wait, none failing', async () => {
      const plant = newPlant('Concurrent');
      const answers = await Promise.all(
        Array.from({ length: 50 }, () => post(plant, 'concurrent-1')),
      );
      const created = answers.filter(
        (answer) =>
          answer.status === 200 &&
          answer.headers['idempotent-replayed'] === undefined,
      );
      expect(created).toHaveLength(1);
      for (const answer of answers) {
        if (answer.status === 200) {
          expect(answer.text).toBe(created[0].text);
        } else {
          expect(answer.status).toBe(409);
          expect(answer.body).toEqual({
            error: 409,
            message: IN_FLIGHT_MESSAGE,
          });
          expect(answer.headers['retry-after']).toBe('1');
        }
      }
      expect(await plantsWithId(plant.id)).toBe(1);
      expect(await addedEventsFor(plant.id)).toBe(1);
    });
  });

  describe('a first attempt that never answered (its process died)', () => {
    let crashedToken: string;

    beforeAll(async () => {
      crashedToken = (
        await testApp.app
          .get(TokensService)
          .issue({ name: 'crashed', scopes: ['plants:read', 'plants:write'] })
      ).token;
    });

    /**
     * What an attempt leaves behind when its process dies between its claim and its commit:
     * its key, leased and unanswered, and no plant.
     */
    async function leaveUnanswered(key: string, body: string, leaseMs: number) {
      const fingerprint = createHash('sha256')
        .update(`POST /plants\n${body}`)
        .digest('base64url');
      const tokenId = (
        await testApp.query<{ id: string }>(
          'SELECT id FROM api_tokens WHERE name = ?',
          'crashed',
        )
      )[0].id;
      const postgres = testApp.engine === 'postgres';
      const at = (ms: number) => {
        const date = new Date(ms);
        return postgres
          ? date
          : date.toISOString().replace('T', ' ').replace('Z', '');
      };
      const $ = (n: number) => (postgres ? `$${n}` : '?');
      await testApp.app
        .get<DataSource>(getDataSourceToken())
        .query(
          `INSERT INTO idempotency_keys (caller, idempotency_key, fingerprint, lease_id, lease_expires_at, created_at, expires_at) VALUES (${[1, 2, 3, 4, 5, 6, 7].map($).join(', ')})`,
          [
            `token:${tokenId}`,
            key,
            fingerprint,
            '00000000-0000-4000-8000-000000000000',
            at(Date.now() + leaseMs),
            at(Date.now()),
            at(Date.now() + 86_400_000),
          ],
        );
    }

    it('holds its key for its lease (409), then a repeat takes it over and runs', async () => {
      const plant = newPlant();
      const body = JSON.stringify(plant);
      await leaveUnanswered('crashed-1', body, 1500);
      const leaseEnds = Date.now() + 1500;
      const held = await post(body, 'crashed-1', { bearer: crashedToken });
      expect(held.status).toBe(409);
      expect(held.headers['retry-after']).toBe('1');
      expect(await plantsWithId(plant.id)).toBe(0);
      await new Promise((resolve) =>
        setTimeout(resolve, leaseEnds - Date.now() + 50),
      );
      const taken = await post(body, 'crashed-1', { bearer: crashedToken });
      expect(taken.status).toBe(200);
      expect(taken.headers['idempotent-replayed']).toBeUndefined();
      expect(await plantsWithId(plant.id)).toBe(1);
      const replay = await post(body, 'crashed-1', { bearer: crashedToken });
      expect(replay.text).toBe(taken.text);
      expect(replay.headers['idempotent-replayed']).toBe('true');
    });

    it('commits nothing once a repeat took its key over, and says so (409)', async () => {
      const plant = newPlant();
      const body = JSON.stringify(plant);
      const store = testApp.app.get(IdempotencyStore);
      const claim = store.claim.bind(store);
      let repeat: Claim | undefined;
      // between the first attempt's claim and its transaction, its lease runs out and a
      // repeat takes the key over (the repeat's claim, as IdempotencyStore makes it), and is
      // still running when the first attempt comes to store its answer
      jest.spyOn(store, 'claim').mockImplementationOnce(async (request) => {
        const first = await claim(request);
        const ranOut = new Date(Date.now() + 11_000);
        repeat = await claim(request, ranOut);
        return first;
      });
      try {
        const answer = await post(body, 'taken-over-1');
        expect(repeat?.outcome).toBe('run');
        expect(answer.status).toBe(409);
        expect(answer.body.message).toBe(TAKEN_OVER_MESSAGE);
        expect(await plantsWithId(plant.id)).toBe(0);
        expect(await addedEventsFor(plant.id)).toBe(0);
        expect(await storedKeys('taken-over-1')).toEqual([{ status: null }]);
      } finally {
        jest.restoreAllMocks();
      }
    });

    it('is not taken over by another request with its key, even once its lease ran out', async () => {
      const body = JSON.stringify(newPlant());
      await leaveUnanswered('crashed-2', body, -1000);
      const other = await post(newPlant(), 'crashed-2', {
        bearer: crashedToken,
      });
      expect(other.status).toBe(400);
      expect(other.body.message).toBe(KEY_REUSED_MESSAGE);
    });
  });
});

describe('Idempotency-Key expiry', () => {
  let testApp: TestApp;
  let token: string;

  beforeAll(async () => {
    testApp = await startTestApp({ env: { IDEMPOTENCY_TTL: '1s' } });
    token = await testApp.issueToken();
  });

  afterAll(async () => {
    await testApp.close();
  });

  const post = (body: object, key: string) =>
    testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .set('Idempotency-Key', key)
      .send(body);

  it('frees a key once IDEMPOTENCY_TTL has passed, and deletes it in the background', async () => {
    await post({ id: 1, name: 'Fern' }, 'expiring').expect(200);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    // expired: another request may use it, and is not refused as a reuse
    const reused = await post({ id: 2, name: 'Ivy' }, 'expiring');
    expect(reused.status).toBe(200);
    expect(reused.headers['idempotent-replayed']).toBeUndefined();
    // the sweep runs every IDEMPOTENCY_TTL when that is under a minute
    const deadline = Date.now() + 10_000;
    let left: unknown[];
    do {
      await new Promise((resolve) => setTimeout(resolve, 200));
      left = await testApp.query('SELECT caller FROM idempotency_keys');
    } while (left.length > 0 && Date.now() < deadline);
    expect(left).toEqual([]);
  });
});

describe('Idempotency-Key for a caller longer than the stored column', () => {
  let provider: IdentityProvider;
  let testApp: TestApp;

  beforeAll(async () => {
    provider = await IdentityProvider.start();
    testApp = await startTestApp({ env: provider.env() });
  });

  afterAll(async () => {
    await testApp.close();
    await provider.close();
  });

  // Entra ID v2's issuer and an object id make callers of 120 characters and more
  const post = async (subject: string, body: object) =>
    testApp
      .http()
      .post('/plants')
      .set(
        'Authorization',
        `Bearer ${await provider.token(subject, 'plants:write')}`,
      )
      .set('Idempotency-Key', 'long-caller')
      .send(body);

  it('keeps its keys apart from another long caller, and replays its first answer', async () => {
    const alice = `alice-${'a'.repeat(100)}`;
    const bob = `bob-${'b'.repeat(100)}`;
    const first = await post(alice, { id: 71, name: 'Fern' });
    expect([first.status, first.text]).toEqual([
      200,
      '{"id":71,"name":"Fern"}',
    ]);
    const again = await post(alice, { id: 71, name: 'Fern' });
    expect([again.status, again.text]).toEqual([
      200,
      '{"id":71,"name":"Fern"}',
    ]);
    expect(again.headers['idempotent-replayed']).toBe('true');
    // the same key from another caller is another key
    const other = await post(bob, { id: 72, name: 'Ivy' });
    expect([other.status, other.text]).toEqual([200, '{"id":72,"name":"Ivy"}']);
    expect(other.headers['idempotent-replayed']).toBeUndefined();
    const callers = await testApp.query<{ caller: string }>(
      'SELECT caller FROM idempotency_keys ORDER BY caller',
    );
    expect(callers.map(({ caller }) => caller)).toEqual([
      expect.stringMatching(/^sha256:[A-Za-z0-9_-]{43}$/),
      expect.stringMatching(/^sha256:[A-Za-z0-9_-]{43}$/),
    ]);
  });
});
