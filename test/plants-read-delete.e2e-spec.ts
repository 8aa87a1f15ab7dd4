import {
  pageStatements,
  POSTGRES_LONG_TAG_KEY,
} from '../src/modules/plants/plants.repository';
import { MAX_TAG_BYTES } from '../src/modules/plants/dto/create-plant.dto';
import { freePort } from './helpers/ports';
import { startTestApp, type TestApp } from './helpers/test-app';

const INT64_MIN = '-9223372036854775808';
const INT64_MAX = '9223372036854775807';

describe('listing, reading and deleting plants', () => {
  let testApp: TestApp;
  let baseUrl: string;
  let writer: string;
  let reader: string;

  beforeAll(async () => {
    const port = await freePort();
    baseUrl = `http://127.0.0.1:${port}`;
    testApp = await startTestApp({ port, env: { PUBLIC_BASE_URL: baseUrl } });
    writer = await testApp.issueToken({ scopes: ['plants:write'] });
    reader = await testApp.issueToken({ scopes: ['plants:read'] });
  });

  afterAll(() => testApp.close());

  const create = (body: string) =>
    testApp
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${writer}`)
      .set('Content-Type', 'application/json')
      .send(body)
      .expect(200);
  const get = (path: string, token = reader) =>
    testApp.http().get(path).set('Authorization', `Bearer ${token}`);
  const remove = (path: string, token = writer) =>
    testApp.http().delete(path).set('Authorization', `Bearer ${token}`);

  function nextLink(header: string | undefined): string | undefined {
    if (header === undefined) return undefined;
    const match = /^<([^>]+)>; rel="next"$/.exec(header);
    if (!match) throw new Error(`not a next link: ${header}`);
    return match[1];
  }

  describe('GET /plants/{id}', () => {
    beforeAll(async () => {
      await create(`{"id":${INT64_MIN},"name":"Lowest","tag":"edge"}`);
      await create(`{"id":${INT64_MAX},"name":"Highest"}`);
    });

    it.each([
      [INT64_MIN, `{"id":${INT64_MIN},"name":"Lowest","tag":"edge"}`],
      [INT64_MAX, `{"id":${INT64_MAX},"name":"Highest"}`],
    ])('answers 200 with the plant %s, exactly', async (id, text) => {
      const response = await get(`/plants/${id}`);
      expect(response.status).toBe(200);
      expect(response.text).toBe(text);
    });

    it('answers 404 for an id nobody has', async () => {
      const response = await get('/plants/404404');
      expect(response.status).toBe(404);
      expect(response.body).toEqual({
        error: 404,
        message: 'no plant with id 404404 exists',
      });
    });

    it.each([
      'abc',
      '1.0',
      '1e3',
      '+1',
      '9223372036854775808',
      '-9223372036854775809',
      '%20',
    ])('answers 400 for the id %j, which is not an int64', async (id) => {
      const response = await get(`/plants/${id}`);
      expect(response.status).toBe(400);
      expect(response.body.message).toMatch(
        /^id in the path must be an integer between -9223372036854775808 and 9223372036854775807, got /,
      );
    });
  });

  describe('DELETE /plants/{id}', () => {
    it('answers 204 with no body, after which the plant is gone', async () => {
      await create('{"id":5000,"name":"Doomed"}');
      const response = await remove('/plants/5000');
      expect(response.status).toBe(204);
      expect(response.text).toBe('');
      await get('/plants/5000').expect(404);
      expect(
        await testApp.query('SELECT count(*) AS n FROM plants WHERE id = 5000'),
      ).toEqual([{ n: 0n }]);
    });

    it('answers 404 for an id nobody has, and for one deleted already', async () => {
      await create('{"id":5001,"name":"Once"}');
      await remove('/plants/5001').expect(204);
      const again = await remove('/plants/5001');
      expect(again.status).toBe(404);
      expect(again.body).toEqual({
        error: 404,
        message: 'no plant with id 5001 exists',
      });
    });

    it('deletes the extreme ids exactly', async () => {
      await remove(`/plants/${INT64_MAX}`).expect(204);
      await get(`/plants/${INT64_MIN}`).expect(200);
      await create(`{"id":${INT64_MAX},"name":"Highest again"}`);
    });

    it('answers 400 for an id that is not an int64', async () => {
      await remove('/plants/twelve').expect(400);
    });
  });

  describe('scopes', () => {
    it('gives a read-only token 403 on POST and DELETE', async () => {
      const post = await testApp
        .http()
        .post('/plants')
        .set('Authorization', `Bearer ${reader}`)
        .send({ id: 6000, name: 'Nope' });
      expect(post.status).toBe(403);
      const del = await remove(`/plants/${INT64_MIN}`, reader);
      expect(del.status).toBe(403);
      expect(del.headers['www-authenticate']).toContain('scope="plants:write"');
      await get(`/plants/${INT64_MIN}`).expect(200);
    });

    it('gives a write-only token 403 on the GETs', async () => {
      const one = await get(`/plants/${INT64_MIN}`, writer);
      expect(one.status).toBe(403);
      expect(one.headers['www-authenticate']).toContain('scope="plants:read"');
      await get('/plants', writer).expect(403);
    });

    it('gives no token 401 on every operation', async () => {
      await testApp.http().get('/plants').expect(401);
      await testApp.http().get('/plants/1').expect(401);
      await testApp.http().delete('/plants/1').expect(401);
    });
  });

  describe('query parameters', () => {
    it.each([
      ['TAG=fern', 'TAG'],
      ['limit=5&tags=fern', 'tags'],
      ['after=1&page=2', 'page'],
    ])(
      'refuses ?%s, naming the parameter it does not take',
      async (query, name) => {
        const response = await get(`/plants?${query}`).expect(400);
        expect(response.body).toEqual({
          error: 400,
          message: `query parameter "${name}" is not one this operation takes; it takes limit, tag, after (names are case-sensitive)`,
        });
      },
    );
  });

  describe('long tags', () => {
    // PostgreSQL's btree refuses an entry over 2704 bytes: a tag that long must not reach one.
    // 1000 CJK characters are 3000 bytes of UTF-8, and still fit a URL once percent-encoded.
    const long = (seed: string) =>
      Array.from({ length: 1000 }, (_, i) =>
        String.fromCodePoint(
          0x4e00 + ((i * 7919 + seed.charCodeAt(0)) % 20000),
        ),
      ).join('');

    it('stores, filters and pages plants whose tags are longer than an index entry may be', async () => {
      const tag = long('a');
      // same first characters, another tag: the filter keeps them apart
      const sibling = `${tag.slice(0, 999)}z`;
      const ids = [900001, 900002, 900003];
      for (const [id, plantTag] of [
        [ids[0], tag],
        [ids[1], sibling],
        [ids[2], tag],
      ] as const) {
        await create(JSON.stringify({ id, name: 'long', tag: plantTag }));
      }
      const first = await get(
        `/plants?limit=1&tag=${encodeURIComponent(tag)}`,
      ).expect(200);
      expect((first.body as { id: number }[]).map(({ id }) => id)).toEqual([
        ids[0],
      ]);
      const next = nextLink(first.headers.link);
      const second = await get(next!.slice(baseUrl.length)).expect(200);
      expect(
        (second.body as { id: number; tag: string }[]).map(
          ({ id, tag: found }) => [id, found === tag],
        ),
      ).toEqual([[ids[2], true]]);
      for (const id of ids) await remove(`/plants/${id}`).expect(204);
    });

    it('takes a tag of MAX_TAG_BYTES, which a list finds, and refuses one a byte longer, which no list could carry', async () => {
      // two bytes a character: percent-encoded, six characters each
      const longest = 'é'.repeat(MAX_TAG_BYTES / 2);
      await create(
        JSON.stringify({ id: 900010, name: 'longest', tag: longest }),
      );
      const found = await get(
        `/plants?tag=${encodeURIComponent(longest)}`,
      ).expect(200);
      expect((found.body as { id: number }[]).map(({ id }) => id)).toEqual([
        900010,
      ]);
      const refused = await testApp
        .http()
        .post('/plants')
        .set('Authorization', `Bearer ${writer}`)
        .send({ id: 900011, name: 'too long', tag: `${longest}x` })
        .expect(400);
      expect(refused.body).toEqual({
        error: 400,
        message: `tag is ${MAX_TAG_BYTES + 1} bytes of UTF-8, more than the ${MAX_TAG_BYTES} it may be: a tag must fit the query that lists by it (GET /plants?tag=), percent-encoded`,
      });
      await get('/plants/900011').expect(404);
      await remove('/plants/900010').expect(204);
    });
  });

  describe('a tag of 256 characters or more, whose first 256 characters other plants share', () => {
    const prefix = 'p'.repeat(256);
    const FIRST_ID = 700_001;
    // 2,100 plants share the first 256 characters; every 700th has the tag asked for
    const SHARING = 2100;
    const ids = Array.from({ length: SHARING }, (_, i) => FIRST_ID + i);
    const wanted = `${prefix}wanted`;

    beforeAll(async () => {
      for (let start = 0; start < SHARING; start += 50) {
        await Promise.all(
          ids.slice(start, start + 50).map((id) =>
            create(
              JSON.stringify({
                id,
                name: 'sharing',
                tag:
                  (id - FIRST_ID + 1) % 700 === 0 ? wanted : `${prefix}${id}`,
              }),
            ),
          ),
        );
      }
    });

    afterAll(async () => {
      for (let start = 0; start < SHARING; start += 50) {
        await Promise.all(
          ids
            .slice(start, start + 50)
            .map((id) => remove(`/plants/${id}`).expect(204)),
        );
      }
    });

    /** Every page from the first, following Link: each page's ids, and where it linked on. */
    async function pagesOf(tag: string) {
      const pages: { ids: number[]; after?: string }[] = [];
      let path: string | undefined =
        `/plants?limit=100&tag=${encodeURIComponent(tag)}`;
      while (path !== undefined) {
        const page = await get(path).expect(200);
        const next = nextLink(page.headers.link);
        pages.push({
          ids: (page.body as { id: number }[]).map(({ id }) => id),
          after: next && new URL(next).searchParams.get('after')!,
        });
        path = next?.slice(baseUrl.length);
      }
      return pages;
    }

    it('finds the plants with the whole tag in one page, whatever shares its start', async () => {
      expect(await pagesOf(wanted)).toEqual([
        {
          ids: [FIRST_ID + 699, FIRST_ID + 1399, FIRST_ID + 2099],
          after: undefined,
        },
      ]);
      expect(await pagesOf(`${prefix}${FIRST_ID + 5}`)).toEqual([
        { ids: [FIRST_ID + 5], after: undefined },
      ]);
    });

    it('answers a tag none of them has with one empty page, never a scan of them all', async () => {
      expect(await pagesOf(`${prefix}nomatch`)).toEqual([
        { ids: [], after: undefined },
      ]);
    });

    it('reads a long tag through the index of whole long tags, not the shared prefix', async () => {
      const postgres = testApp.engine === 'postgres';
      if (postgres) await testApp.query('ANALYZE plants');
      // the service's own statement, with `?` for each of its placeholders
      const sql = pageStatements(
        () => '?',
        postgres ? POSTGRES_LONG_TAG_KEY : undefined,
      ).longTaggedAfter;
      const parameters = postgres
        ? [wanted, wanted, FIRST_ID, 101]
        : [wanted, FIRST_ID, 101];
      const plan = await testApp.query<Record<string, string>>(
        `${postgres ? 'EXPLAIN' : 'EXPLAIN QUERY PLAN'} ${sql}`,
        ...parameters,
      );
      const lines = plan.map((row) => row['QUERY PLAN'] ?? row.detail);
      expect(lines.join('\n')).toContain('IDX_plants_long_tag_id');
      expect(lines.join('\n')).not.toMatch(/Seq Scan|^SCAN plants$/m);
    });
  });

  describe('GET /plants', () => {
    const PAGED = 2500;
    const FIRST = 10_000;

    beforeAll(async () => {
      const ids = Array.from({ length: PAGED }, (_, i) => FIRST + i);
      for (let start = 0; start < ids.length; start += 50) {
        await Promise.all(
          ids.slice(start, start + 50).map((id) =>
            create(
              JSON.stringify({
                id,
                name: `plant ${id}`,
                tag: id % 3 === 0 ? 'fizz' : 'other',
              }),
            ),
          ),
        );
      }
    });

    it(`pages through ${PAGED} plants with limit and after, each exactly once, in id order`, async () => {
      const seen: number[] = [];
      let path: string | undefined = `/plants?limit=97&after=${FIRST - 1}`;
      let pages = 0;
      while (path !== undefined) {
        const response = await get(path).expect(200);
        const page = response.body as { id: number }[];
        expect(page.length).toBeLessThanOrEqual(97);
        seen.push(...page.map((plant) => plant.id));
        const link = nextLink(response.headers.link);
        if (link !== undefined) {
          expect(link.startsWith(`${baseUrl}/plants?`)).toBe(true);
          path = link.slice(baseUrl.length);
        } else {
          path = undefined;
        }
        pages += 1;
      }
      const paged = seen.filter((id) => id >= FIRST && id < FIRST + PAGED);
      expect(paged).toEqual(Array.from({ length: PAGED }, (_, i) => FIRST + i));
      expect(seen).toEqual([...seen].sort((a, b) => a - b));
      expect(new Set(seen).size).toBe(seen.length);
      expect(pages).toBeGreaterThanOrEqual(Math.ceil(PAGED / 97));
    });

    it('starts from the lowest id and returns 100 plants by default', async () => {
      const response = await get('/plants').expect(200);
      expect(response.body).toHaveLength(100);
      expect(
        response.text.startsWith(
          `[{"id":${INT64_MIN},"name":"Lowest","tag":"edge"}`,
        ),
      ).toBe(true);
      expect(nextLink(response.headers.link)).toMatch(/[?&]limit=100(&|$)/);
    });

    it('filters by exact tag and keeps the tag in the next link', async () => {
      const response = await get(
        `/plants?tag=fizz&limit=10&after=${FIRST - 1}`,
      ).expect(200);
      const page = response.body as { id: number; tag: string }[];
      // 10,000 % 3 is 1, so the first fizz is 10,002, and every third one after it
      expect(page.map((plant) => plant.id)).toEqual(
        Array.from({ length: 10 }, (_, i) => FIRST + 2 + 3 * i),
      );
      expect(
        page.every((plant) => plant.tag === 'fizz' && plant.id % 3 === 0),
      ).toBe(true);
      expect(nextLink(response.headers.link)).toContain('tag=fizz');
      await get('/plants?tag=FIZZ').expect(200, '[]');
      await get('/plants?tag=fiz').expect(200, '[]');
    });

    it('answers an empty page, without a next link, after the last id', async () => {
      const response = await get(`/plants?after=${INT64_MAX}`).expect(200);
      expect(response.text).toBe('[]');
      expect(response.headers.link).toBeUndefined();
    });

    it('lists a plant without a tag with no tag key', async () => {
      const response = await get(
        `/plants?after=${INT64_MAX.slice(0, -1)}6&limit=1`,
      ).expect(200);
      expect(response.text).toBe(
        `[{"id":${INT64_MAX},"name":"Highest again"}]`,
      );
    });

    it.each(['0', '1001', '-1', '1.5', 'ten', '', '99999999999'])(
      'answers 400 for limit=%j',
      async (limit) => {
        const response = await get(`/plants?limit=${limit}`);
        expect(response.status).toBe(400);
        expect(response.body).toEqual({
          error: 400,
          message: 'limit must be an integer between 1 and 1000',
        });
      },
    );

    it.each(['9223372036854775808', 'abc', '1e3', '1.0'])(
      'answers 400 for after=%j',
      async (after) => {
        const response = await get(`/plants?after=${after}`);
        expect(response.status).toBe(400);
        expect(response.body).toEqual({
          error: 400,
          message:
            'after must be an integer between -9223372036854775808 and 9223372036854775807',
        });
      },
    );

    it('answers 400 for a repeated limit', async () => {
      await get('/plants?limit=1&limit=2').expect(400);
    });

    it.each(['tag[]=x', 'tag[0]=x', 'limit[a]=1', 'x]=1'])(
      'answers 400 naming the parameter for %s, rather than ignore it',
      async (query) => {
        const response = await get(`/plants?${query}`).expect(400);
        expect(response.body.message).toContain(
          `query parameter ${JSON.stringify(query.split('=')[0])} is not a parameter`,
        );
      },
    );
  });
});

describe('a page of big plants', () => {
  let testApp: TestApp;

  beforeAll(async () => {
    testApp = await startTestApp({ env: { PAGE_MAX_BYTES: '4kb' } });
  });

  afterAll(() => testApp.close());

  it('stops filling before its JSON passes PAGE_MAX_BYTES, and links to the rest', async () => {
    const token = await testApp.issueToken();
    const names = ['a', 'é', '\u0001', '"'].flatMap((char) =>
      Array.from({ length: 3 }, (_, i) => `${i}${char.repeat(500)}`),
    );
    for (const [index, name] of names.entries()) {
      await testApp
        .http()
        .post('/plants')
        .set('Authorization', `Bearer ${token}`)
        .send({ id: index + 1, name, tag: 't'.repeat(index * 10) })
        .expect(200);
    }
    const seen: string[] = [];
    let path: string | undefined = '/plants?limit=1000';
    let pages = 0;
    while (path !== undefined) {
      const response = await testApp
        .http()
        .get(path)
        .set('Authorization', `Bearer ${token}`)
        .expect(200);
      expect(Buffer.byteLength(response.text)).toBeLessThanOrEqual(4096);
      const page = response.body as { name: string }[];
      expect(page.length).toBeGreaterThan(0);
      seen.push(...page.map((plant) => plant.name));
      pages += 1;
      const link = response.headers.link as string | undefined;
      const next = link && new URL(/^<([^>]+)>; rel="next"$/.exec(link)![1]);
      path = next ? next.pathname + next.search : undefined;
      if (next) expect(next.searchParams.get('limit')).toBe('1000');
    }
    expect(seen).toEqual(names);
    expect(pages).toBeGreaterThan(2);
  });
});
