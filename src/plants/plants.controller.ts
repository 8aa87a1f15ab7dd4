import { Body, Controller, HttpCode, HttpStatus, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiOkResponse,
  ApiOperation,
} from '@nestjs/swagger';
import { RequireScopes } from '../auth/decorators/require-scopes.decorator';
import { ErrorBody } from '../common/errors/error-body';
import { CreatePlantDto } from './dto/create-plant.dto';
import { PlantDto } from './dto/plant.dto';
import { PlantsService } from './plants.service';

@Controller('plants')
export class PlantsController {
  constructor(private readonly plantsService: PlantsService) {}

  @Post()
  @HttpCode(HttpStatus.OK)
  @RequireScopes('plants:write')
  @ApiOperation({ summary: 'Creates a new plant in the store' })
  @ApiOkResponse({ description: 'plant response', type: PlantDto })
  @ApiBadRequestResponse({ description: 'unexpected error', type: ErrorBody })
  async create(@Body() newPlant: CreatePlantDto): Promise<PlantDto> {
    return PlantDto.fromEntity(await this.plantsService.create(newPlant));
  }
}
