import {
  BadRequestException,
  HttpStatus,
  NotFoundException,
} from '@nestjs/common';
import { HttpErrorWithHeaders } from '../../platform/common/errors/http-error-with-headers';
import { NOTHING_TO_CHANGE } from './dto/update-plant.dto';
import { Plant } from './plant.entity';
import type { PlantChanges, PlantsRepository } from './plants.repository';
import { PlantsService } from './plants.service';

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
