import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ScopesModule } from '../../platform/auth';
import { EventsModule } from '../../platform/events';
import { Plant } from './plant.entity';
import { PLANT_EVENTS } from './plant.events';
import { PLANT_SCOPES } from './plant.scopes';
import { PlantsController } from './plants.controller';
import { PlantsRepository } from './plants.repository';
import { PlantsService } from './plants.service';

@Module({
  imports: [
    TypeOrmModule.forFeature([Plant]),
    ScopesModule.forFeature(PLANT_SCOPES),
    EventsModule.forFeature(PLANT_EVENTS),
  ],
  controllers: [PlantsController],
  providers: [PlantsRepository, PlantsService],
})
export class PlantsModule {}
