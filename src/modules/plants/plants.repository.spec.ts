import type { DataSource } from 'typeorm';
import {
  createDataSourceOptions,
  DuplicateKeyError,
  isDatabaseUnavailable,
  PortableDataSource,
} from '../../platform/database';
import { OutboxEvent } from '../../platform/events';
import { Plant } from './plant.entity';
import {
  isLongTag,
  pageStatements,
  PlantsRepository,
  POSTGRES_LONG_TAG_KEY,
} from './plants.repository';

const INT64_MAX = 9_223_372_036_854_775_807n;

function plant(id: bigint, name: string, tag: string | null): Plant {
  return Object.assign(new Plant(), { id, name, tag });
}

/** The repository on a real SQLite database with the service's schema, migrations and triggers included. */
describe('PlantsRepository', () => {
  let dataSource: DataSource;
  let repository: PlantsRepository;

  beforeEach(async () => {
    dataSource = await new PortableDataSource({
      ...createDataSourceOptions({
        engine: 'sqlite',
        sqlitePath: ':memory:',
        synchronous: 'normal',
      }),
      entities: [Plant, OutboxEvent],
    }).initialize();
    repository = new PlantsRepository(dataSource);
    for (const [id, tag] of [
      [1n, 'fern'],
      [2n, null],
      [3n, 'fern'],
      [INT64_MAX, 'fern'],
    ] as const) {
      await repository.insert(plant(id, `plant ${id}`, tag));
    }
  });

  afterEach(async () => {
    if (dataSource.isInitialized) await dataSource.destroy();
  });

  it('reads a plant back exactly, int64 and missing tag included, as a Plant', async () => {
    const found = await repository.findById(INT64_MAX);
    expect(found).toBeInstanceOf(Plant);
    expect(found).toEqual(plant(INT64_MAX, `plant ${INT64_MAX}`, 'fern'));
    expect(await repository.findById(2n)).toEqual(plant(2n, 'plant 2', null));
    expect(await repository.findById(4n)).toBeUndefined();
  });

  it('rejects a second plant with the same id with a DuplicateKeyError that names it', async () => {
    const failure: unknown = await repository
      .insert(plant(1n, 'again', null))
      .catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(DuplicateKeyError);
    expect(failure).toMatchObject({ entityName: 'Plant', key: [['id', 1n]] });
    expect(await repository.findById(1n)).toEqual(plant(1n, 'plant 1', 'fern'));
  });

  it('pages in id order with each combination of tag and cursor', async () => {
    const ids = async (query: Parameters<typeof repository.page>[0]) =>
      (await repository.page(query)).map(({ id }) => BigInt(id));
    expect(await ids({ limit: 3 })).toEqual([1n, 2n, 3n]);
    expect(await ids({ limit: 10, after: 1n })).toEqual([2n, 3n, INT64_MAX]);
    expect(await ids({ limit: 2, tag: 'fern' })).toEqual([1n, 3n]);
    expect(await ids({ limit: 10, tag: 'fern', after: 1n })).toEqual([
      3n,
      INT64_MAX,
    ]);
    expect(await ids({ limit: 10, tag: 'moss' })).toEqual([]);
  });

  it('pages a tag of 256 characters or more by itself, through the long-tag index, whatever shares its start', async () => {
    const start = 'p'.repeat(256);
    for (let id = 10n; id < 20n; id += 1n) {
      await repository.insert(
        plant(
          id,
          `plant ${id}`,
          id % 3n === 0n ? `${start}wanted` : `${start}${id}`,
        ),
      );
    }
    const ids = async (query: Parameters<typeof repository.page>[0]) =>
      (await repository.page(query)).map(({ id }) => BigInt(id));
    expect(await ids({ limit: 10, tag: `${start}wanted` })).toEqual([
      12n,
      15n,
      18n,
    ]);
    expect(await ids({ limit: 1, tag: `${start}wanted`, after: 12n })).toEqual([
      15n,
    ]);
    expect(await ids({ limit: 10, tag: start })).toEqual([]);
    const plan = await dataSource.query<{ detail: string }[]>(
      `EXPLAIN QUERY PLAN ${pageStatements(() => `?`, undefined).longTaggedAfter}`,
      [`${start}wanted`, 12, 10],
    );
    expect(plan.map(({ detail }) => detail).join('\n')).toContain(
      'IDX_plants_long_tag_id',
    );
  });

  it('changes the fields given, from a version named, and counts the version up', async () => {
    const renamed = await repository.update(1n, [1], { name: 'Fern' });
    expect(renamed).toEqual(
      Object.assign(plant(1n, 'Fern', 'fern'), { version: 2 }),
    );
    const untagged = await repository.update(1n, [5, 2], { tag: null });
    expect(untagged).toEqual(
      Object.assign(plant(1n, 'Fern', null), { version: 3 }),
    );
    const both = await repository.update(INT64_MAX, [1], {
      name: 'Top',
      tag: 'moss',
    });
    expect(both).toEqual(
      Object.assign(plant(INT64_MAX, 'Top', 'moss'), { version: 2 }),
    );
    expect(await repository.findById(1n)).toEqual(untagged);
    // the other plants are left as they were
    expect(await repository.findById(3n)).toEqual(plant(3n, 'plant 3', 'fern'));
  });

  it('changes nothing from a version the plant has passed, or of a plant nobody has', async () => {
    await repository.update(1n, [1], { name: 'Fern' });
    expect(await repository.update(1n, [1], { name: 'Stale' })).toBeUndefined();
    expect(await repository.update(9n, [1], { name: 'Ghost' })).toBeUndefined();
    expect(await repository.findById(1n)).toEqual(
      Object.assign(plant(1n, 'Fern', 'fern'), { version: 2 }),
    );
    expect(await repository.findById(9n)).toBeUndefined();
  });

  it('deletes once, and says whether it did', async () => {
    expect(await repository.deleteById(3n)).toBe(true);
    expect(await repository.deleteById(3n)).toBe(false);
    expect(await repository.findById(3n)).toBeUndefined();
  });

  it('rejects with an error the filter answers with 503 once the database is closed', async () => {
    await dataSource.destroy();
    const failure: unknown = await repository
      .findById(1n)
      .catch((error: unknown) => error);
    expect(isDatabaseUnavailable(failure)).toBe(true);
  });
});

describe('pageStatements', () => {
  it('spells each variant with the driver’s placeholders, limit last', () => {
    expect(
      pageStatements((position) => `$${position}`, POSTGRES_LONG_TAG_KEY),
    ).toEqual({
      all: 'SELECT id, name, tag FROM plants ORDER BY id LIMIT $1',
      after:
        'SELECT id, name, tag FROM plants WHERE id > $1 ORDER BY id LIMIT $2',
      tagged:
        'SELECT id, name, tag FROM plants WHERE substr(tag, 1, 256) = $1 AND tag = $2 ORDER BY id LIMIT $3',
      taggedAfter:
        'SELECT id, name, tag FROM plants WHERE substr(tag, 1, 256) = $1 AND tag = $2 AND id > $3 ORDER BY id LIMIT $4',
      longTagged:
        'SELECT id, name, tag FROM plants WHERE length(tag) >= 256 AND plant_tag_digest(tag) = plant_tag_digest($1) AND tag = $1 ORDER BY id LIMIT $2',
      longTaggedAfter:
        'SELECT id, name, tag FROM plants WHERE length(tag) >= 256 AND plant_tag_digest(tag) = plant_tag_digest($1) AND tag = $1 AND id > $2 ORDER BY id LIMIT $3',
    });
  });

  it('finds a long tag by itself where the index holds it whole (SQLite)', () => {
    const statements = pageStatements((position) => `?${position}`, undefined);
    expect(statements.longTagged).toBe(
      'SELECT id, name, tag FROM plants WHERE length(tag) >= 256 AND tag = ?1 ORDER BY id LIMIT ?2',
    );
    expect(statements.longTaggedAfter).toBe(
      'SELECT id, name, tag FROM plants WHERE length(tag) >= 256 AND tag = ?1 AND id > ?2 ORDER BY id LIMIT ?3',
    );
  });

  it.each([
    ['', false],
    ['a'.repeat(255), false],
    ['a'.repeat(256), true],
    // 255 characters of two UTF-16 units each: 510 units, but short of the prefix
    ['🌿'.repeat(255), false],
    ['🌿'.repeat(256), true],
  ])('tells a tag as long as the indexed prefix (%#)', (tag, long) => {
    expect(isLongTag(tag)).toBe(long);
  });
});
