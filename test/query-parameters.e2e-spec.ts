import { startTestApp, type TestApp } from './helpers/test-app';

interface Operation {
  parameters?: { in: string; name: string }[];
  requestBody?: unknown;
}

// docs/decisions.md, "Query parameters": on the engine of the jest project
describe(`query parameters an operation does not take (${process.env.TEST_ENGINE ?? 'sqlite'})`, () => {
  let testApp: TestApp;
  let token: string;
  let subscriptionId: string;

  beforeAll(async () => {
    testApp = await startTestApp({
      env: { WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true' },
    });
    token = await testApp.issueToken();
    await call('post', '/plants').send({ id: 7, name: 'Kept' }).expect(200);
    subscriptionId = (
      (
        await call('post', '/webhooks/subscriptions')
          .send({ url: 'http://127.0.0.1:9/kept' })
          .expect(201)
      ).body as { id: string }
    ).id;
  });

  afterAll(() => testApp.close());

  const call = (method: 'get' | 'post' | 'delete', path: string) =>
    testApp.http()[method](path).set('Authorization', `Bearer ${token}`);

  /** Every operation of the document, its path filled with a plant or subscription that exists. */
  async function operations() {
    const document = (await testApp.http().get('/openapi.json').expect(200))
      .body as { paths: Record<string, Record<string, Operation>> };
    return Object.entries(document.paths).flatMap(([template, item]) =>
      Object.entries(item).map(([method, operation]) => ({
        method: method as 'get' | 'post' | 'delete',
        template,
        path: template.replace(
          '{id}',
          template.startsWith('/plants') ? '7' : subscriptionId,
        ),
        takes: (operation.parameters ?? [])
          .filter((parameter) => parameter.in === 'query')
          .map((parameter) => parameter.name),
        body: operation.requestBody
          ? template.startsWith('/plants')
            ? { id: 8, name: 'Never stored' }
            : { url: 'http://127.0.0.1:9/never' }
          : undefined,
      })),
    );
  }

  it('refuses one on every operation of the document, naming it and the ones it takes, and changes nothing', async () => {
    const all = await operations();
    // every kind there is: with query parameters, without, with a body, deleting
    expect(all.map(({ method, template }) => `${method} ${template}`)).toEqual(
      expect.arrayContaining([
        'get /plants',
        'post /plants',
        'delete /plants/{id}',
        'get /health/live',
        'get /health/ready',
        'get /webhooks/subscriptions/{id}/deliveries',
        'delete /webhooks/subscriptions/{id}',
      ]),
    );
    for (const { method, path, takes, body } of all) {
      const request = call(method, `${path}?dryRun=true`);
      const response = await (body ? request.send(body) : request);
      expect({
        method,
        path,
        status: response.status,
        body: response.body,
      }).toEqual({
        method,
        path,
        status: 400,
        body: {
          error: 400,
          message:
            takes.length === 0
              ? 'query parameter "dryRun" is not one this operation takes; it takes no query parameters'
              : `query parameter "dryRun" is not one this operation takes; it takes ${takes.join(', ')} (names are case-sensitive)`,
        },
      });
    }
    await call('get', '/plants/7').expect(200);
    await call('get', '/plants/8').expect(404);
    const subscriptions = await call('get', '/webhooks/subscriptions').expect(
      200,
    );
    expect(
      (subscriptions.body as { id: string }[]).map(({ id }) => id),
    ).toEqual([subscriptionId]);
  });

  it('takes the ones an operation declares, and refuses a bracketed name', async () => {
    await call('get', '/plants?limit=1&tag=x').expect(200);
    await call(
      'get',
      `/webhooks/subscriptions/${subscriptionId}/deliveries?limit=1`,
    ).expect(200);
    const bracketed = await call('delete', '/plants/7?force[]=1').expect(400);
    expect(bracketed.body).toEqual({
      error: 400,
      message:
        'query parameter "force[]" is not a parameter: give each parameter once, by its plain name (force=...)',
    });
    await call('get', '/plants/7').expect(200);
  });

  it('refuses one before reading the body: an unknown parameter and a broken body say the parameter', async () => {
    const response = await call('post', '/plants?dryRun=1')
      .set('Content-Type', 'application/json')
      .send('{not json')
      .expect(400);
    expect(response.body.message).toBe(
      'query parameter "dryRun" is not one this operation takes; it takes no query parameters',
    );
  });
});
