import { Injectable, NotFoundException } from '@nestjs/common';
import { CreatePlantDto } from './dto/create-plant.dto';
import { Plant } from './plant.entity';
import { PlantsRepository, type PlantPageQuery } from './plants.repository';

export interface PlantPage {
  plants: Plant[];
  /** Set when more plants follow the last one of this page. */
  hasMore: boolean;
}

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

  /** Keyset pagination: an index range scan from `after`, whatever the table's size. */
  async list(query: PlantPageQuery): Promise<PlantPage> {
    const plants = await this.plants.page({
      ...query,
      limit: query.limit + 1,
    });
    return {
      plants: plants.slice(0, query.limit),
      hasMore: plants.length > query.limit,
    };
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
