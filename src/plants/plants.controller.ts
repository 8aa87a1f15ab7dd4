import { Body, Controller, HttpCode, HttpStatus, Post } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  ApiBody,
} from '@nestjs/swagger';
import { RequireScopes } from '../auth/decorators/require-scopes.decorator';
import { ApiServiceErrorResponses } from '../common/errors/api-error-responses.decorator';
import { ErrorBody } from '../common/errors/error-body.dto';
import { CreatePlantDto } from './dto/create-plant.dto';
import { PlantDto } from './dto/plant.dto';
import { PlantsService } from './plants.service';

@ApiTags('plants')
@ApiServiceErrorResponses()
@Controller('plants')
export class PlantsController {
  constructor(private readonly plantsService: PlantsService) {}

  @Post()
  @HttpCode(HttpStatus.OK)
  @RequireScopes('plants:write')
  @ApiOperation({
    operationId: 'addPlant',
    summary: 'Creates a new plant in the store',
  })
  @ApiBody({
    description: 'Plant to add to the store',
    type: CreatePlantDto,
    required: true,
  })
  @ApiOkResponse({ description: 'plant response', type: PlantDto })
  @ApiBadRequestResponse({ description: 'unexpected error', type: ErrorBody })
  async create(@Body() newPlant: CreatePlantDto): Promise<PlantDto> {
    return PlantDto.fromEntity(await this.plantsService.create(newPlant));
  }
}
