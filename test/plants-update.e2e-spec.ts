import { MAX_TAG_BYTES } from '../src/modules/plants/dto/create-plant.dto';
import { NOTHING_TO_CHANGE } from '../src/modules/plants/dto/update-plant.dto';
import { startTestApp, type TestApp } from './helpers/test-app';

const INT64_MIN = '-9223372036854775808';
const INT64_MAX = '9223372036854775807';

/** PATCH /plants/{id}: changes guarded by If-Match (docs/decisions.md, "Updates"). */
describe('changing a plant', () => {
  let testApp: TestApp;
  let writer: string;
  let reader: string;
  let nextId = 1000;

  beforeAll(async () => {
    testApp = await startTestApp();
    writer = await testApp.issueToken({
      scopes: ['plants:read', 'plants:write'],
    });
    reader = await testApp.issueToken({ scopes: ['plants:read'] });
  });

  afterAll(() => testApp.close());

  async function addPlant(body: string): Promise<void> {
    await testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${writer}`)
      .set('Content-Type', 'application/json')
      .send(body)
      .expect(200);
  }

  const patch = (
    id: string | number,
    body: string,
    ifMatch?: string,
    token = writer,
  ) => {
    const call = testApp
      .http()
      .patch(`/plants/${id}`)
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/json');
    if (ifMatch !== undefined) call.set('If-Match', ifMatch);
    return call.send(body);
  };

  const read = (id: string | number, headers: Record<string, string> = {}) =>
    testApp
      .http()
      .get(`/plants/${id}`)
      .set('Authorization', `Bearer ${reader}`)
      .set(headers);

  /** A new plant, at version 1. */
  async function newPlant(tag = ',"tag":"fern"'): Promise<number> {
    const id = nextId++;
    await addPlant(`{"id":${id},"name":"Boston Fern"${tag}}`);
    return id;
  }

  it('reads a new plant at version 1, as its ETag, and not in its body', async () => {
    const id = nextId++;
    const created = await testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${writer}`)
      .set('Content-Type', 'application/json')
      .send(`{"id":${id},"name":"Boston Fern","tag":"fern"}`)
      .expect(200);
    // a create answers no ETag: its idempotent replay could not know a later version
    expect(created.headers.etag).toBeUndefined();
    const response = await read(id).expect(200);
    expect(response.headers.etag).toBe('"1"');
    expect(response.text).toBe(
      `{"id":${id},"name":"Boston Fern","tag":"fern"}`,
    );
  });

  it('answers a read whose If-None-Match is the current ETag with 304, and a stale one with the plant', async () => {
    const id = await newPlant();
    const fresh = await read(id, { 'If-None-Match': '"1"' });
    expect(fresh.status).toBe(304);
    expect(fresh.text).toBe('');
    await patch(id, '{"name":"Sword Fern"}', '"1"').expect(200);
    const changed = await read(id, { 'If-None-Match': '"1"' }).expect(200);
    expect(changed.headers.etag).toBe('"2"');
    expect(changed.body).toEqual({ id, name: 'Sword Fern', tag: 'fern' });
  });

  it('changes the fields sent, keeps the others, and counts the version up', async () => {
    const id = await newPlant();
    const renamed = await patch(id, '{"name":"Maidenhair Fern"}', '"1"');
    expect(renamed.status).toBe(200);
    expect(renamed.headers.etag).toBe('"2"');
    expect(renamed.text).toBe(
      `{"id":${id},"name":"Maidenhair Fern","tag":"fern"}`,
    );
    const retagged = await patch(id, '{"tag":"shade"}', '"2"').expect(200);
    expect(retagged.headers.etag).toBe('"3"');
    expect(retagged.body).toEqual({
      id,
      name: 'Maidenhair Fern',
      tag: 'shade',
    });
    const both = await patch(id, '{"name":"Tree Fern","tag":"tall"}', '"3"');
    expect(both.status).toBe(200);
    expect(both.headers.etag).toBe('"4"');
    const stored = await read(id).expect(200);
    expect(stored.headers.etag).toBe('"4"');
    expect(stored.text).toBe(`{"id":${id},"name":"Tree Fern","tag":"tall"}`);
  });

  it('removes the tag for a tag of null, and adds one to a plant that had none', async () => {
    const id = await newPlant();
    const untagged = await patch(id, '{"tag":null}', '"1"').expect(200);
    expect(untagged.text).toBe(`{"id":${id},"name":"Boston Fern"}`);
    expect((await read(id)).text).toBe(`{"id":${id},"name":"Boston Fern"}`);
    const [row] = await testApp.query<{ tag: string | null }>(
      'SELECT tag FROM plants WHERE id = ?',
      BigInt(id),
    );
    expect(row.tag).toBeNull();
    await patch(id, '{"tag":"again"}', '"2"').expect(200);
    expect((await read(id)).body).toEqual({
      id,
      name: 'Boston Fern',
      tag: 'again',
    });
  });

  it.each([INT64_MIN, INT64_MAX])(
    'changes the plant with the extreme id %s, exactly',
    async (id) => {
      await addPlant(`{"id":${id},"name":"Edge"}`);
      const response = await patch(id, '{"name":"Edge, changed"}', '"1"');
      expect(response.status).toBe(200);
      expect(response.text).toBe(`{"id":${id},"name":"Edge, changed"}`);
    },
  );

  it('answers 428 without If-Match, or with *, and changes nothing', async () => {
    const id = await newPlant();
    for (const ifMatch of [undefined, '*']) {
      const response = await patch(id, '{"name":"Unwanted"}', ifMatch);
      expect(response.status).toBe(428);
      expect(response.body).toEqual({
        error: 428,
        message: expect.stringMatching(
          /^If-Match(: \*)? .*plant.*: send the ETag of the plant as you last read it \(a GET answers it\)/,
        ) as string,
      });
    }
    const stored = await read(id);
    expect(stored.headers.etag).toBe('"1"');
    expect(stored.body).toEqual({ id, name: 'Boston Fern', tag: 'fern' });
  });

  it('answers 412 with the current ETag for a version the plant has passed, and changes nothing', async () => {
    const id = await newPlant();
    await patch(id, '{"name":"First"}', '"1"').expect(200);
    const stale = await patch(id, '{"name":"Second"}', '"1"');
    expect(stale.status).toBe(412);
    expect(stale.headers.etag).toBe('"2"');
    expect(stale.body).toEqual({
      error: 412,
      message:
        'the plant has changed since the version If-Match names ("1"); it is now "2": read it again, make your change to it, and send it with If-Match: "2"',
    });
    const unknown = await patch(id, '{"name":"Second"}', 'W/"2"');
    expect(unknown.status).toBe(412);
    expect(unknown.body.message).toMatch(/^If-Match names no version/);
    // a list applies when it names the current version
    await patch(id, '{"name":"Third"}', '"1", "2"').expect(200);
    expect((await read(id)).body.name).toBe('Third');
  });

  it('answers 404 for a plant nobody has', async () => {
    const response = await patch(404404, '{"name":"Ghost"}', '"1"');
    expect(response.status).toBe(404);
    expect(response.body).toEqual({
      error: 404,
      message: 'no plant with id 404404 exists',
    });
  });

  it.each([
    ['{}', '{}', NOTHING_TO_CHANGE],
    // the id is never changed: without another field there is nothing to change
    ['only an id', '{"id":5}', NOTHING_TO_CHANGE],
    [
      'a null name',
      '{"name":null}',
      'name must not be null: leave it out to keep the name',
    ],
    ['a number for a name', '{"name":7}', 'name must be a string'],
    ['a number for a tag', '{"name":"ok","tag":7}', 'tag must be a string'],
    [
      'a tag a byte too long',
      JSON.stringify({ tag: 'x'.repeat(MAX_TAG_BYTES + 1) }),
      `tag is ${MAX_TAG_BYTES + 1} bytes of UTF-8, more than the ${MAX_TAG_BYTES} it may be: a tag must fit the query that lists by it (GET /plants?tag=), percent-encoded`,
    ],
    ['an array', '[]', 'request body must be a JSON object, got an array'],
    [
      'broken JSON',
      '{"name":',
      expect.stringMatching(/^request body is not valid JSON/),
    ],
  ])(
    'answers 400 for %s, and changes nothing',
    async (_case, body, message) => {
      const id = await newPlant();
      const response = await patch(id, body, '"1"');
      expect(response.status).toBe(400);
      expect(response.body).toEqual({ error: 400, message });
      const stored = await read(id);
      expect(stored.headers.etag).toBe('"1"');
      expect(stored.body).toEqual({ id, name: 'Boston Fern', tag: 'fern' });
    },
  );

  it('answers 400 for a path id that is not an int64', async () => {
    const response = await patch('abc', '{"name":"x"}', '"1"');
    expect(response.status).toBe(400);
    expect(response.body.message).toMatch(/^id in the path must be/);
  });

  it('answers 401 without a token and 403 to a read-only token, and changes nothing', async () => {
    const id = await newPlant();
    const anonymous = await testApp
      .http()
      .patch(`/plants/${id}`)
      .set('Content-Type', 'application/json')
      .set('If-Match', '"1"')
      .send('{"name":"Intruder"}');
    expect(anonymous.status).toBe(401);
    const readOnly = await patch(id, '{"name":"Intruder"}', '"1"', reader);
    expect(readOnly.status).toBe(403);
    expect((await read(id)).headers.etag).toBe('"1"');
  });

  it('applies one of 20 concurrent changes from one version, and answers the others 412', async () => {
    const id = await newPlant();
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, editor) =>
        patch(id, JSON.stringify({ name: `Editor ${editor}` }), '"1"'),
      ),
    );
    const statuses = answers.map(({ status }) => status).sort();
    expect(statuses).toEqual([200, ...Array<number>(19).fill(412)]);
    const winner = answers.find(({ status }) => status === 200)!;
    const stored = await read(id);
    expect(stored.headers.etag).toBe('"2"');
    expect(stored.body).toEqual(winner.body);
    for (const loser of answers.filter(({ status }) => status === 412)) {
      expect(loser.headers.etag).toBe('"2"');
    }
  });
});
