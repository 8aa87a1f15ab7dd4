import { Module } from '@nestjs/common';
import { PlantsController } from './plants.controller';
import { plantsRepositoryProvider } from './plants-repository.provider';
import { PlantsService } from './plants.service';

@Module({
  controllers: [PlantsController],
  providers: [plantsRepositoryProvider, PlantsService],
})
export class PlantsModule {}
