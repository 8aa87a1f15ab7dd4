import {
  BadRequestException,
  HttpStatus,
  NotFoundException,
} from '@nestjs/common';
import { HttpErrorWithHeaders } from '../../platform/common/errors';
import { DuplicateKeyError } from '../../platform/database';
import { NOTHING_TO_CHANGE } from './dto/update-plant.dto';
import { Plant } from './plant.entity';
import type {
  PlantChanges,
  PlantPageQuery,
  PlantRow,
  PlantsRepository,
} from './plants.repository';
import { plantJson, PlantsService } from './plants.service';

/** A plants table of one plant, at `version`, that applies a change only from that version. */
function tableOf(plant: Plant | undefined) {
  const changes: [bigint, number[], PlantChanges][] = [];
  const repository = {
    findById: jest.fn((id: bigint) =>
      Promise.resolve(plant?.id === id ? { ...plant } : undefined),
    ),
    update: jest.fn((id: bigint, versions: number[], fields: PlantChanges) => {
      changes.push([id, versions, fields]);
      if (!plant || plant.id !== id || !versions.includes(plant.version)) {
        return Promise.resolve(undefined);
      }
      Object.assign(plant, fields, { version: plant.version + 1 });
      return Promise.resolve({ ...plant });
    }),
  };
  const service = new PlantsService(repository as unknown as PlantsRepository);
  return { service, repository, changes };
}

const fern = () =>
  Object.assign(new Plant(), {
    id: 7n,
    name: 'Fern',
    tag: 'shade',
    version: 3,
  });

async function refusalOf(change: Promise<unknown>): Promise<Error> {
  try {
    await change;
  } catch (error) {
    return error as Error;
  }
  throw new Error('the change was not refused');
}

describe('PlantsService.update', () => {
  it('sets only the fields the body sends, from the versions If-Match names', async () => {
    const { service, changes } = tableOf(fern());
    const changed = await service.update(7n, [2, 3], { name: 'Tree Fern' });
    expect(changed).toMatchObject({
      id: 7n,
      name: 'Tree Fern',
      tag: 'shade',
      version: 4,
    });
    expect(changes).toEqual([[7n, [2, 3], { name: 'Tree Fern' }]]);
  });

  it('passes a tag of null on, which removes the tag', async () => {
    const { service, changes } = tableOf(fern());
    const changed = await service.update(7n, [3], { tag: null });
    expect(changed.tag).toBeNull();
    expect(changes[0][2]).toEqual({ tag: null });
  });

  it('refuses a body that changes nothing with 400, and writes nothing', async () => {
    const { service, repository } = tableOf(fern());
    const refusal = await refusalOf(service.update(7n, [3], {}));
    expect(refusal).toBeInstanceOf(BadRequestException);
    expect(refusal.message).toBe(NOTHING_TO_CHANGE);
    expect(repository.update).not.toHaveBeenCalled();
    expect(repository.findById).not.toHaveBeenCalled();
  });

  it('answers 412 with the version now when the plant has passed the version named', async () => {
    const { service } = tableOf(fern());
    const refusal = await refusalOf(service.update(7n, [1, 2], { name: 'x' }));
    expect(refusal).toBeInstanceOf(HttpErrorWithHeaders);
    const stale = refusal as HttpErrorWithHeaders;
    expect(stale.getStatus()).toBe(HttpStatus.PRECONDITION_FAILED);
    expect(stale.headers).toEqual({ ETag: '"3"' });
    expect(stale.message).toMatch(
      /^the plant has changed since the version If-Match names \("1", "2"\); it is now "3"/,
    );
  });

  it('answers 412 without writing when If-Match names no version of ours', async () => {
    const { service, repository } = tableOf(fern());
    const refusal = await refusalOf(service.update(7n, [], { name: 'x' }));
    expect((refusal as HttpErrorWithHeaders).getStatus()).toBe(
      HttpStatus.PRECONDITION_FAILED,
    );
    expect(refusal.message).toMatch(/^If-Match names no version of the plant/);
    expect(repository.update).not.toHaveBeenCalled();
  });

  it('answers 404 for a plant nobody has', async () => {
    const { service } = tableOf(undefined);
    const refusal = await refusalOf(service.update(8n, [1], { name: 'x' }));
    expect(refusal).toBeInstanceOf(NotFoundException);
    expect(refusal.message).toBe('no plant with id 8 exists');
  });
});

/** A plants table of `count` plants with ids 1 to count, that records each page it is asked for. */
function tableOfMany(count: number) {
  const rows: PlantRow[] = Array.from({ length: count }, (_, index) => ({
    id: BigInt(index + 1),
    name: `plant ${index + 1}`,
    tag: index % 2 === 0 ? 'even' : null,
  }));
  const asked: PlantPageQuery[] = [];
  const repository = {
    page: jest.fn((query: PlantPageQuery) => {
      asked.push(query);
      return Promise.resolve(
        rows
          .filter(
            (row) =>
              (query.after === undefined || BigInt(row.id) > query.after) &&
              (query.tag === undefined || row.tag === query.tag),
          )
          .slice(0, query.limit),
      );
    }),
  };
  const service = new PlantsService(repository as unknown as PlantsRepository);
  return { service, asked };
}

const ids = (page: { items: PlantRow[] }) =>
  page.items.map(({ id }) => Number(id));

describe('PlantsService.list', () => {
  it('reads one batch, one more than the page, for a page of 100 or less', async () => {
    const { service, asked } = tableOfMany(30);
    const page = await service.list({ limit: 10 }, 1_000_000);
    expect(ids(page)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(page.hasMore).toBe(true);
    expect(asked).toEqual([{ tag: undefined, after: undefined, limit: 11 }]);
    expect(page.json.text).toBe(
      `[${page.items.map((plant) => plantJson(plant)).join(',')}]`,
    );
  });

  it('says no more follow when the table ends with the page', async () => {
    const { service } = tableOfMany(10);
    const page = await service.list({ limit: 10 }, 1_000_000);
    expect(ids(page)).toHaveLength(10);
    expect(page.hasMore).toBe(false);
    const short = await service.list({ limit: 50, after: 7n }, 1_000_000);
    expect(ids(short)).toEqual([8, 9, 10]);
    expect(short.hasMore).toBe(false);
  });

  it('reads a large page in batches that double, from the last id read, never past the page', async () => {
    const { service, asked } = tableOfMany(1000);
    const page = await service.list({ limit: 300, tag: 'even' }, 1_000_000);
    expect(page.items).toHaveLength(300);
    expect(page.hasMore).toBe(true);
    expect(asked).toEqual([
      { tag: 'even', after: undefined, limit: 101 },
      { tag: 'even', after: 201n, limit: 200 },
    ]);
  });

  it('reads the next batch only while the last one was full', async () => {
    const { service, asked } = tableOfMany(150);
    const page = await service.list({ limit: 300 }, 1_000_000);
    expect(page.items).toHaveLength(150);
    expect(page.hasMore).toBe(false);
    expect(asked.map(({ limit }) => limit)).toEqual([101, 200]);
  });

  it('ends a page early where its JSON would pass the byte bound, and says more follow', async () => {
    const { service } = tableOfMany(30);
    const one = plantJson({ id: 1n, name: 'plant 1', tag: 'even' });
    const page = await service.list({ limit: 20 }, 2 + one.length * 3 + 2 + 1);
    expect(ids(page)).toEqual([1, 2, 3]);
    expect(page.hasMore).toBe(true);
  });
});

describe('PlantsService: add, read and delete', () => {
  function tableFor(failure?: Error) {
    const stored = new Map<bigint, Plant>();
    const repository = {
      insert: jest.fn((plant: Plant) => {
        if (failure !== undefined) return Promise.reject(failure);
        stored.set(plant.id, plant);
        return Promise.resolve();
      }),
      findById: jest.fn((id: bigint) => Promise.resolve(stored.get(id))),
      deleteById: jest.fn((id: bigint) => Promise.resolve(stored.delete(id))),
    };
    return {
      service: new PlantsService(repository as unknown as PlantsRepository),
      stored,
    };
  }

  it('stores a new plant at version 1, a missing tag as null', async () => {
    const { service, stored } = tableFor();
    const plant = await service.create({ id: 5n, name: 'Ivy' });
    expect(plant).toBeInstanceOf(Plant);
    expect(plant).toEqual(
      Object.assign(new Plant(), {
        id: 5n,
        name: 'Ivy',
        tag: null,
        version: 1,
      }),
    );
    expect(stored.get(5n)).toBe(plant);
    expect(
      (await service.create({ id: 6n, name: 'Fig', tag: 'tree' })).tag,
    ).toBe('tree');
  });

  it('words a duplicate id for a plant, keeping the cause', async () => {
    const duplicate = new DuplicateKeyError('Plant', [['id', 5n]], new Error());
    const { service } = tableFor(duplicate);
    const refusal = await refusalOf(service.create({ id: 5n, name: 'Ivy' }));
    expect(refusal).toBeInstanceOf(BadRequestException);
    expect(refusal.message).toBe('a plant with id 5 already exists');
    expect(refusal.cause).toBe(duplicate);
  });

  it('passes any other failure of the insert on as it is', async () => {
    const outage = new Error('the database is away');
    const { service } = tableFor(outage);
    expect(await refusalOf(service.create({ id: 5n, name: 'Ivy' }))).toBe(
      outage,
    );
  });

  it('reads a plant, and answers 404 for one nobody has', async () => {
    const { service } = tableFor();
    await service.create({ id: 5n, name: 'Ivy' });
    expect((await service.findOne(5n)).name).toBe('Ivy');
    const refusal = await refusalOf(service.findOne(6n));
    expect(refusal).toBeInstanceOf(NotFoundException);
    expect(refusal.message).toBe('no plant with id 6 exists');
  });

  it('deletes a plant once, then answers 404', async () => {
    const { service, stored } = tableFor();
    await service.create({ id: 5n, name: 'Ivy' });
    await service.remove(5n);
    expect(stored.has(5n)).toBe(false);
    const refusal = await refusalOf(service.remove(5n));
    expect(refusal).toBeInstanceOf(NotFoundException);
    expect(refusal.message).toBe('no plant with id 5 exists');
  });
});
