import { Injectable, NotFoundException } from '@nestjs/common';
import {
  boundedPage,
  jsonStringBytes,
  jsonStringBytesAtMost,
  type JsonSize,
  type Page,
} from '../common/pagination/byte-bounded-page';
import { CreatePlantDto } from './dto/create-plant.dto';
import { Plant } from './plant.entity';
import { PlantsRepository, type PlantPageQuery } from './plants.repository';

/** A plant's JSON, `{"id":…,"name":…,"tag":…}`, in bytes: bounded cheaply, or exactly. */
const PLANT_JSON_SIZE: JsonSize<Plant> = {
  atMost: ({ name, tag }) =>
    35 +
    jsonStringBytesAtMost(name.length) +
    (tag === null ? 0 : 7 + jsonStringBytesAtMost(tag.length)),
  exactly: ({ id, name, tag }) =>
    15 +
    String(id).length +
    jsonStringBytes(name) +
    (tag === null ? 0 : 7 + jsonStringBytes(tag)),
};

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
    await this.plants.insert(plant);
    return plant;
  }

  /**
   * Keyset pagination: an index range scan from `after`, whatever the table's size. A page
   * holds at most `query.limit` plants, and stops earlier where its JSON would pass `maxBytes`
   * (docs/decisions.md, "Listing plants").
   */
  async list(query: PlantPageQuery, maxBytes: number): Promise<Page<Plant>> {
    const rows = await this.plants.page({ ...query, limit: query.limit + 1 });
    return boundedPage(rows, query.limit, maxBytes, PLANT_JSON_SIZE);
  }

  async findOne(id: bigint): Promise<Plant> {
    const plant = await this.plants.findById(id);
    if (!plant) throw plantNotFound(id);
    return plant;
  }

  /** Deletes a plant; the plant.deleted event is written by the same statement. */
  async remove(id: bigint): Promise<void> {
    if (!(await this.plants.deleteById(id))) throw plantNotFound(id);
  }
}

function plantNotFound(id: bigint) {
  return new NotFoundException(`no plant with id ${id} exists`);
}
