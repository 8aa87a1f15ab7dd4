import {
  BadRequestException,
  Injectable,
  NotFoundException,
} from '@nestjs/common';
import {
  isUniqueViolation,
  isUnstorableText,
} from '../database/database-errors';
import { CreatePlantDto } from './dto/create-plant.dto';
import { Plant } from './plant.entity';
import { PlantsRepository } from './plants.repository';

export interface PlantPage {
  plants: Plant[];
  /** Set when more plants follow the last one of this page. */
  hasMore: boolean;
}

@Injectable()
export class PlantsService {
  constructor(private readonly plants: PlantsRepository) {}

  /**
   * Stores a new plant; the database's primary key, not a read before the write, decides
   * between concurrent creates of one id (D7).
   */
  async create({ id, name, tag }: CreatePlantDto): Promise<Plant> {
    const plant = Object.assign(new Plant(), { id, name, tag: tag ?? null });
    try {
      await this.plants.insert(plant);
    } catch (error) {
      if (isUniqueViolation(error)) {
        throw new BadRequestException(`a plant with id ${id} already exists`);
      }
      if (isUnstorableText(error)) {
        throw new BadRequestException(
          'name and tag must not contain the character U+0000, which this PostgreSQL-backed store cannot keep',
        );
      }
      throw error;
    }
    return plant;
  }

  /** Keyset pagination: an index range scan from `after`, whatever the table's size. */
  async list(options: {
    limit: number;
    tag?: string;
    after?: bigint;
  }): Promise<PlantPage> {
    let plants: Plant[];
    try {
      plants = await this.plants.page({ ...options, limit: options.limit + 1 });
    } catch (error) {
      // PostgreSQL cannot compare text holding U+0000; no stored tag holds one there
      if (isUnstorableText(error)) return { plants: [], hasMore: false };
      throw error;
    }
    return {
      plants: plants.slice(0, options.limit),
      hasMore: plants.length > options.limit,
    };
  }

  async findOne(id: bigint): Promise<Plant> {
    const plant = await this.plants.findById(id);
    if (!plant) throw plantNotFound(id);
    return plant;
  }

  async remove(id: bigint): Promise<void> {
    if (!(await this.plants.deleteById(id))) throw plantNotFound(id);
  }
}

function plantNotFound(id: bigint) {
  return new NotFoundException(`no plant with id ${id} exists`);
}
