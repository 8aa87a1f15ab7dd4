import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  HttpStatus,
  Inject,
  Post,
  Query,
  Req,
  Res,
} from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiBody,
  ApiNoContentResponse,
  ApiNotFoundResponse,
  ApiOkResponse,
  ApiOperation,
  ApiTags,
  getSchemaPath,
} from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { RequireScopes } from '../auth/decorators/require-scopes.decorator';
import { ErrorBody } from '../common/errors/error-body.dto';
import { publicBaseUrlOf } from '../common/http/public-base-url';
import { Int64Param } from '../common/validation/int64.decorators';
import { appConfig, type AppConfig } from '../config/app.config';
import { CreatePlantDto } from './dto/create-plant.dto';
import { ListPlantsQueryDto, MAX_PAGE_SIZE } from './dto/list-plants-query.dto';
import { PlantDto } from './dto/plant.dto';
import type { Plant } from './plant.entity';
import { PlantsService } from './plants.service';

const PLANT_ID = 'Identification number of the plant';

@ApiTags('plants')
// the spec's words for the 400 of every plant operation
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
    schema: {
      type: 'array',
      items: { $ref: getSchemaPath(PlantDto) },
      maxItems: MAX_PAGE_SIZE,
    },
    headers: {
      Link: {
        description:
          'When more plants follow: `<url of the next page>; rel="next"`. A page ends early, before `limit` plants, where its body would pass the service\'s page size bound (1 MiB by default); follow the link for the rest',
        schema: { type: 'string', pattern: '^<[^>]+>; rel="next"$' },
      },
    },
  })
  async findAll(
    @Query() query: ListPlantsQueryDto,
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
  ): Promise<Plant[]> {
    const { items: plants, hasMore } = await this.plantsService.list(
      query,
      this.config.pageMaxBytes,
    );
    if (hasMore) {
      const next = new URLSearchParams({ limit: String(query.limit) });
      if (query.tag !== undefined) next.set('tag', query.tag);
      next.set('after', String(plants[plants.length - 1].id));
      response.setHeader(
        'Link',
        `<${publicBaseUrlOf(request, this.config)}/plants?${next.toString()}>; rel="next"`,
      );
    }
    return plants;
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
  create(@Body() newPlant: CreatePlantDto): Promise<Plant> {
    return this.plantsService.create(newPlant);
  }

  @Get(':id')
  @RequireScopes('plants:read')
  @ApiOperation({
    operationId: 'findPlantById',
    summary: 'Returns the plant with this id',
  })
  @ApiOkResponse({ description: 'plant response', type: PlantDto })
  @ApiNotFoundResponse({ description: 'no plant has this id', type: ErrorBody })
  findOne(@Int64Param('id', PLANT_ID) id: bigint): Promise<Plant> {
    return this.plantsService.findOne(id);
  }

  @Delete(':id')
  @HttpCode(HttpStatus.NO_CONTENT)
  @RequireScopes('plants:write')
  @ApiOperation({
    operationId: 'deletePlant',
    summary: 'Deletes the plant with this id',
  })
  @ApiNoContentResponse({ description: 'plant deleted' })
  @ApiNotFoundResponse({ description: 'no plant has this id', type: ErrorBody })
  async remove(@Int64Param('id', PLANT_ID) id: bigint): Promise<void> {
    await this.plantsService.remove(id);
  }
}
