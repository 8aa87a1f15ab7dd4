import {
  createPlantStoreClient,
  type PlantStoreClient,
} from '../clients/typescript';
import { startTestApp, type TestApp } from './helpers/test-app';

const MIN = -(2n ** 63n);
const MAX = 2n ** 63n - 1n;
// beyond 2^53, where JSON.parse would round: 9007199254740993 would read as ...992
const BEYOND_DOUBLES = 2n ** 53n + 1n;

describe('the typed client (clients/typescript) against the running service', () => {
  let testApp: TestApp;
  let client: PlantStoreClient;
  let baseUrl: string;

  beforeAll(async () => {
    testApp = await startTestApp({
      env: { WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true' },
    });
    const { port } = testApp.server.address() as { port: number };
    baseUrl = `http://127.0.0.1:${port}`;
    client = createPlantStoreClient({
      baseUrl,
      token: await testApp.issueToken({
        scopes: ['plants:read', 'plants:write', 'webhooks:manage'],
      }),
    });
  });

  afterAll(() => testApp.close());

  it('creates, reads, lists and deletes plants with ids at both ends of int64, exactly', async () => {
    for (const id of [MIN, BEYOND_DOUBLES, MAX]) {
      const created = await client.POST('/plants', {
        body: { id, name: `plant ${id}`, tag: 'edge' },
      });
      expect(created.response.status).toBe(200);
      expect(created.data).toEqual({ id, name: `plant ${id}`, tag: 'edge' });

      const read = await client.GET('/plants/{id}', {
        params: { path: { id } },
      });
      expect(read.data?.id).toBe(id);
    }

    const firstPage = await client.GET('/plants', {
      params: { query: { limit: 2 } },
    });
    expect(firstPage.data?.map((plant) => plant.id)).toEqual([
      MIN,
      BEYOND_DOUBLES,
    ]);
    expect(firstPage.response.headers.get('link')).toBe(
      `<${baseUrl}/plants?limit=2&after=${BEYOND_DOUBLES}>; rel="next"`,
    );
    const rest = await client.GET('/plants', {
      params: { query: { after: BEYOND_DOUBLES, tag: 'edge' } },
    });
    expect(rest.data).toEqual([{ id: MAX, name: `plant ${MAX}`, tag: 'edge' }]);

    const deleted = await client.DELETE('/plants/{id}', {
      params: { path: { id: MAX } },
    });
    expect(deleted.response.status).toBe(204);
    const gone = await client.GET('/plants/{id}', {
      params: { path: { id: MAX } },
    });
    expect(gone.data).toBeUndefined();
    expect(gone.error).toEqual({
      error: 404,
      message: `no plant with id ${MAX} exists`,
    });
    expect(await testApp.query('SELECT id FROM plants ORDER BY id')).toEqual([
      { id: MIN },
      { id: BEYOND_DOUBLES },
    ]);
  });

  it('answers a duplicate id with the Error object, typed', async () => {
    const again = await client.POST('/plants', {
      body: { id: MIN, name: 'again' },
    });
    expect(again.response.status).toBe(400);
    expect(again.error).toEqual({
      error: 400,
      message: `a plant with id ${MIN} already exists`,
    });
  });

  it('manages webhook subscriptions and lists their deliveries', async () => {
    const url = 'http://127.0.0.1:9/hooks/plants';
    const created = await client.POST('/webhooks/subscriptions', {
      body: { url, events: ['plant.added'] },
    });
    expect(created.response.status).toBe(201);
    const id = created.data!.id;
    expect(created.data).toEqual(
      expect.objectContaining({
        url,
        events: ['plant.added'],
        secret: expect.stringMatching(/^whsec_/),
      }),
    );

    const listed = await client.GET('/webhooks/subscriptions');
    expect(listed.data?.map((subscription) => subscription.id)).toContain(id);
    const found = await client.GET('/webhooks/subscriptions/{id}', {
      params: { path: { id } },
    });
    expect(found.data?.url).toBe(url);
    const deliveries = await client.GET(
      '/webhooks/subscriptions/{id}/deliveries',
      { params: { path: { id } } },
    );
    expect(deliveries.response.status).toBe(200);
    expect(Array.isArray(deliveries.data)).toBe(true);

    const removed = await client.DELETE('/webhooks/subscriptions/{id}', {
      params: { path: { id } },
    });
    expect(removed.response.status).toBe(204);
    const after = await client.GET('/webhooks/subscriptions/{id}', {
      params: { path: { id } },
    });
    expect(after.error?.error).toBe(404);
  });

  it('reads the health probes without a token', async () => {
    const anonymous = createPlantStoreClient({ baseUrl });
    expect((await anonymous.GET('/health/live')).response.status).toBe(200);
    expect((await anonymous.GET('/health/ready')).response.status).toBe(200);
    const refused = await anonymous.GET('/plants');
    expect(refused.error?.error).toBe(401);
  });
});
