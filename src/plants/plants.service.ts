import { BadRequestException, Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { isUniqueViolation } from '../database/database-errors';
import { CreatePlantDto } from './dto/create-plant.dto';
import { Plant } from './plant.entity';

@Injectable()
export class PlantsService {
  constructor(
    @InjectRepository(Plant)
    private readonly plants: Repository<Plant>,
  ) {}

  /**
   * Stores a new plant; the database's primary key, not a read before the write, decides
   * between concurrent creates of one id (D7).
   */
  async create({ id, name, tag }: CreatePlantDto): Promise<Plant> {
    const plant = this.plants.create({ id, name, tag: tag ?? null });
    try {
      await this.plants.insert(plant);
    } catch (error) {
      if (isUniqueViolation(error)) {
        throw new BadRequestException(`a plant with id ${id} already exists`);
      }
      throw error;
    }
    return plant;
  }
}
