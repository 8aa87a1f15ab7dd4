import Database from 'better-sqlite3';
import { Plant } from './plant.entity';
import { pageStatements } from './plants.repository';
import { SqlitePlantsRepository } from './sqlite-plants.repository';

function plant(id: bigint, name: string, tag: string | null): Plant {
  return Object.assign(new Plant(), { id, name, tag });
}

describe('SqlitePlantsRepository', () => {
  let db: Database.Database;
  let repository: SqlitePlantsRepository;

  beforeEach(async () => {
    db = new Database(':memory:');
    db.defaultSafeIntegers(true);
    db.exec(
      'CREATE TABLE plants (id bigint PRIMARY KEY NOT NULL, name text NOT NULL, tag text)',
    );
    repository = new SqlitePlantsRepository(db);
    for (const [id, tag] of [
      [1n, 'fern'],
      [2n, null],
      [3n, 'fern'],
      [9_223_372_036_854_775_807n, 'fern'],
    ] as const) {
      await repository.insert(plant(id, `plant ${id}`, tag));
    }
  });

  afterEach(() => db.close());

  it('reads a plant back exactly, int64 and missing tag included', async () => {
    expect(await repository.findById(9_223_372_036_854_775_807n)).toEqual(
      plant(9_223_372_036_854_775_807n, 'plant 9223372036854775807', 'fern'),
    );
    expect(await repository.findById(2n)).toEqual(plant(2n, 'plant 2', null));
    expect(await repository.findById(4n)).toBeUndefined();
  });

  it('rejects a second plant with the same id with the driver’s primary-key error', async () => {
    await expect(
      repository.insert(plant(1n, 'again', null)),
    ).rejects.toMatchObject({ code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
  });

  it('pages in id order with each combination of tag and cursor', async () => {
    const ids = async (query: Parameters<typeof repository.page>[0]) =>
      (await repository.page(query)).map(({ id }) => id);
    expect(await ids({ limit: 3 })).toEqual([1n, 2n, 3n]);
    expect(await ids({ limit: 10, after: 1n })).toEqual([
      2n,
      3n,
      9_223_372_036_854_775_807n,
    ]);
    expect(await ids({ limit: 2, tag: 'fern' })).toEqual([1n, 3n]);
    expect(await ids({ limit: 10, tag: 'fern', after: 1n })).toEqual([
      3n,
      9_223_372_036_854_775_807n,
    ]);
    expect(await ids({ limit: 10, tag: 'moss' })).toEqual([]);
  });

  it('deletes once, and says whether it did', async () => {
    expect(await repository.deleteById(3n)).toBe(true);
    expect(await repository.deleteById(3n)).toBe(false);
    expect(await repository.findById(3n)).toBeUndefined();
  });

  it('turns a statement failing on a closed database into a rejection', async () => {
    db.close();
    await expect(repository.findById(1n)).rejects.toThrow(
      'The database connection is not open',
    );
    db = new Database(':memory:');
  });
});

describe('pageStatements', () => {
  it('spells each variant with the driver’s placeholders, limit last', () => {
    expect(pageStatements((position) => `$${position}`)).toEqual({
      all: 'SELECT id, name, tag FROM plants ORDER BY id LIMIT $1',
      after:
        'SELECT id, name, tag FROM plants WHERE id > $1 ORDER BY id LIMIT $2',
      tagged:
        'SELECT id, name, tag FROM plants WHERE tag = $1 ORDER BY id LIMIT $2',
      taggedAfter:
        'SELECT id, name, tag FROM plants WHERE tag = $1 AND id > $2 ORDER BY id LIMIT $3',
    });
  });
});
