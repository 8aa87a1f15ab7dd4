import {
  BadRequestException,
  Injectable,
  NotFoundException,
} from '@nestjs/common';
import { type JsonPage, PageFiller } from '../../platform/common/pagination';
import { staleVersion } from '../../platform/common/concurrency';
import { DuplicateKeyError } from '../../platform/database';
import { CreatePlantDto } from './dto/create-plant.dto';
import { NOTHING_TO_CHANGE, UpdatePlantDto } from './dto/update-plant.dto';
import { Plant } from './plant.entity';
import {
  PlantsRepository,
  type PlantChanges,
  type PlantPageQuery,
  type PlantRow,
} from './plants.repository';

/**
 * A plant as answers write it (stringifyLosslessJson): `{"id":…,"name":…,"tag":…}`, tag left
 * out when null, and its version, which is its ETag, never. Written by hand from the row, a
 * hundred a page, cheaper than the generic writer and without an entity apiece
 * (bench/README.md, "Issue 50, item 4").
 */
export const plantJson = ({ id, name, tag }: PlantRow): string =>
  `{"id":${id},"name":${JSON.stringify(name)}` +
  (tag === null ? '}' : `,"tag":${JSON.stringify(tag)}}`);

/** Rows read by a page's first query: the default page, and one to tell whether more follow. */
const FIRST_BATCH = 101;

@Injectable()
export class PlantsService {
  constructor(private readonly plants: PlantsRepository) {}

  /**
   * Stores a new plant. The database's primary key, not a read before the write, decides
   * between concurrent creates of one id (docs/decisions.md, "Duplicate ids"); the plant.added
   * event is written by the same statement.
   */
  async create({ id, name, tag }: CreatePlantDto): Promise<Plant> {
    const plant = Object.assign(new Plant(), { id, name, tag: tag ?? null });
    try {
      await this.plants.insert(plant);
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw plantIdTaken(id, error);
      throw error;
    }
    return plant;
  }

  /**
   * Keyset pagination: index range scans from `after`, whatever the table's size. A page
   * holds at most `query.limit` plants, and stops earlier where its JSON would pass `maxBytes`
   * (docs/decisions.md, "Listing plants"). Rows are read in batches that double from
   * FIRST_BATCH, so a page of large plants never reads more than about twice what it returns.
   */
  async list(
    query: PlantPageQuery,
    maxBytes: number,
  ): Promise<JsonPage<PlantRow>> {
    const page = new PageFiller(query.limit, maxBytes, plantJson);
    let after = query.after;
    let batch = Math.min(query.limit + 1, FIRST_BATCH);
    for (;;) {
      const rows = await this.plants.page({
        tag: query.tag,
        after,
        limit: batch,
      });
      for (const row of rows) {
        if (!page.offer(row)) return page.done(true);
      }
      if (rows.length < batch) return page.done(false);
      after = BigInt(rows[rows.length - 1].id);
      batch = Math.min(2 * batch, query.limit + 1 - page.items.length);
    }
  }

  async findOne(id: bigint): Promise<Plant> {
    const plant = await this.plants.findById(id);
    if (!plant) throw plantNotFound(id);
    return plant;
  }

  /**
   * Changes the plant if it is still at one of `versions` (its ETag in If-Match), in one
   * conditional write that also counts its version up and writes plant.updated: of concurrent
   * changes from one version, one applies and the others get 412 with the version now
   * (docs/decisions.md, "Updates"). A tag of null removes the tag.
   */
  async update(
    id: bigint,
    versions: number[],
    { name, tag }: UpdatePlantDto,
  ): Promise<Plant> {
    const changes: PlantChanges = {};
    if (name !== undefined) changes.name = name;
    if (tag !== undefined) changes.tag = tag;
    if (Object.keys(changes).length === 0) {
      throw new BadRequestException(NOTHING_TO_CHANGE);
    }
    if (versions.length > 0) {
      const changed = await this.plants.update(id, versions, changes);
      if (changed) return changed;
    }
    const plant = await this.findOne(id);
    throw staleVersion('plant', versions, plant.version);
  }

  /** Deletes a plant; the plant.deleted event is written by the same statement. */
  async remove(id: bigint): Promise<void> {
    if (!(await this.plants.deleteById(id))) throw plantNotFound(id);
  }
}

function plantNotFound(id: bigint) {
  return new NotFoundException(`no plant with id ${id} exists`);
}

function plantIdTaken(id: bigint, cause: DuplicateKeyError) {
  return new BadRequestException(`a plant with id ${id} already exists`, {
    cause,
  });
}
