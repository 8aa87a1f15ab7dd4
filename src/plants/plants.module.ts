import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Plant } from './plant.entity';
import { PlantsController } from './plants.controller';
import { PlantsRepository } from './plants.repository';
import { PlantsService } from './plants.service';

@Module({
  imports: [TypeOrmModule.forFeature([Plant])],
  controllers: [PlantsController],
  providers: [PlantsRepository, PlantsService],
})
export class PlantsModule {}
