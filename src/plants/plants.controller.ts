import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  HttpStatus,
  Inject,
  Param,
  Post,
  Query,
  Res,
} from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiParam,
  ApiTags,
} from '@nestjs/swagger';
import type { Response } from 'express';
import { RequireScopes } from '../auth/decorators/require-scopes.decorator';
import { ApiServiceErrorResponses } from '../common/errors/api-error-responses.decorator';
import { ErrorBody } from '../common/errors/error-body.dto';
import { ParseInt64Pipe } from '../common/validation/parse-int64.pipe';
import { appConfig, type AppConfig } from '../config/app.config';
import { CreatePlantDto } from './dto/create-plant.dto';
import { ListPlantsQueryDto } from './dto/list-plants-query.dto';
import { PlantDto } from './dto/plant.dto';
import { PlantsService } from './plants.service';

const ID_PARAMETER = {
  name: 'id',
  description: 'Identification number of the plant',
  schema: { type: 'integer', format: 'int64' },
} as const;

@ApiTags('plants')
@ApiServiceErrorResponses()
@ApiBadRequestResponse({ description: 'unexpected error', type: ErrorBody })
@Controller('plants')
export class PlantsController {
  constructor(
    private readonly plantsService: PlantsService,
    @Inject(appConfig.KEY) private readonly config: AppConfig,
  ) {}

  @Get()
  @RequireScopes('plants:read')
  @ApiOperation({
    operationId: 'findPlants',
    summary: 'Lists plants in ascending id order, a page at a time',
  })
  @ApiOkResponse({
    description: 'plant response',
    type: PlantDto,
    isArray: true,
    headers: {
      Link: {
        description:
          'When more plants follow: `<url of the next page>; rel="next"`',
        schema: { type: 'string' },
      },
    },
  })
  async findAll(
    @Query() query: ListPlantsQueryDto,
    @Res({ passthrough: true }) response: Response,
  ): Promise<PlantDto[]> {
    const { plants, hasMore } = await this.plantsService.list(query);
    if (hasMore) {
      const next = new URLSearchParams({ limit: String(query.limit) });
      if (query.tag !== undefined) next.set('tag', query.tag);
      next.set('after', String(plants[plants.length - 1].id));
      response.setHeader(
        'Link',
        `<${this.config.publicBaseUrl}/plants?${next.toString()}>; rel="next"`,
      );
    }
    return plants.map((plant) => PlantDto.fromEntity(plant));
  }

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
  async create(@Body() newPlant: CreatePlantDto): Promise<PlantDto> {
    return PlantDto.fromEntity(await this.plantsService.create(newPlant));
  }

  @Get(':id')
  @RequireScopes('plants:read')
  @ApiOperation({
    operationId: 'findPlantById',
    summary: 'Returns the plant with this id',
  })
  @ApiParam(ID_PARAMETER)
  @ApiOkResponse({ description: 'plant response', type: PlantDto })
  @ApiNotFoundResponse({ description: 'no plant has this id', type: ErrorBody })
  async findOne(
    @Param('id', new ParseInt64Pipe()) id: bigint,
  ): Promise<PlantDto> {
    return PlantDto.fromEntity(await this.plantsService.findOne(id));
  }

  @Delete(':id')
  @HttpCode(HttpStatus.NO_CONTENT)
  @RequireScopes('plants:write')
  @ApiOperation({
    operationId: 'deletePlant',
    summary: 'Deletes the plant with this id',
  })
  @ApiParam(ID_PARAMETER)
  @ApiNoContentResponse({ description: 'plant deleted' })
  @ApiNotFoundResponse({ description: 'no plant has this id', type: ErrorBody })
  async remove(@Param('id', new ParseInt64Pipe()) id: bigint): Promise<void> {
    await this.plantsService.remove(id);
  }
}
