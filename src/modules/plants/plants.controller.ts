import {
  Body,
  Controller,
  Delete,
  Get,
  Headers,
  HttpCode,
  HttpStatus,
  Inject,
  Patch,
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
import { RequireScopes } from '../../platform/auth';
import { Idempotent } from '../../platform/idempotency';
import {
  ApiIfMatch,
  ApiIfNoneMatch,
  ETAG_HEADER,
  etagOf,
  versionsOf,
} from '../../platform/common/concurrency';
import { ErrorBody, errorExamples } from '../../platform/common/errors';
import { INT64_RANGE_MESSAGE, JsonText } from '../../platform/common/json';
import { publicBaseUrlOf } from '../../platform/http';
import { Int64Param } from '../../platform/common/validation';
import { appConfig, type AppConfig } from '../../platform/config';
import { CreatePlantDto } from './dto/create-plant.dto';
import { ListPlantsQueryDto, MAX_PAGE_SIZE } from './dto/list-plants-query.dto';
import { EXAMPLE_PLANT_ID, PlantDto } from './dto/plant.dto';
import { NOTHING_TO_CHANGE, UpdatePlantDto } from './dto/update-plant.dto';
import type { Plant } from './plant.entity';
import { plantJson, PlantsService } from './plants.service';

const PLANT_ID = 'Identification number of the plant';

/**
 * A plant's answer: the specification's Plant, its version as the ETag header. The header
 * goes with the text rather than through `@Res()`, which every read would pay for
 * (bench/README.md, "Issue 61, plants PATCH").
 */
const answerOf = (plant: Plant) =>
  new JsonText(plantJson(plant), { ETag: etagOf(plant.version) });

/**
 * The spec's words for the 400 of every plant operation, kept as the reference has them, and
 * what they mean here.
 */
function badRequest(kinds: Record<string, string>) {
  return ApiBadRequestResponse({
    description:
      'unexpected error: the request is not one this operation takes, and nothing was changed; `message` says what is wrong and where',
    type: ErrorBody,
    examples: errorExamples(400, kinds),
  });
}

const BAD_PATH_ID = {
  'Id not an int64': `id in the path must be ${INT64_RANGE_MESSAGE}, got "abc"`,
};

const NO_SUCH_PLANT = ApiNotFoundResponse({
  description: 'no plant has this id',
  type: ErrorBody,
  examples: errorExamples(404, {
    'No such plant': `no plant with id ${EXAMPLE_PLANT_ID} exists`,
  }),
});

@ApiTags('plants')
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
  @badRequest({
    'Limit out of range': `limit must be an integer between 1 and ${MAX_PAGE_SIZE}`,
    'After not an int64': `after must be ${INT64_RANGE_MESSAGE}`,
    'Unknown parameter':
      'query parameter "TAG" is not one this operation takes; it takes limit, tag, after (names are case-sensitive)',
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
  ): Promise<JsonText> {
    const {
      items: plants,
      hasMore,
      json,
    } = await this.plantsService.list(query, this.config.pageMaxBytes);
    if (hasMore) {
      const next = new URLSearchParams({ limit: String(query.limit) });
      if (query.tag !== undefined) next.set('tag', query.tag);
      next.set('after', String(plants[plants.length - 1].id));
      response.setHeader(
        'Link',
        `<${publicBaseUrlOf(request, this.config)}/plants?${next.toString()}>; rel="next"`,
      );
    }
    return json;
  }

  @Post()
  @HttpCode(HttpStatus.OK)
  @RequireScopes('plants:write')
  // one statement and the key's answer: READ COMMITTED is enough, the primary key decides
  @Idempotent({ isolation: 'READ COMMITTED' })
  @ApiOperation({
    operationId: 'addPlant',
    summary: 'Creates a new plant in the store',
  })
  @badRequest({
    'Duplicate id': `a plant with id ${EXAMPLE_PLANT_ID} already exists`,
    'Id out of range': `id must be ${INT64_RANGE_MESSAGE}`,
    'Missing name': 'name is required',
    'Not JSON':
      'request body is not valid JSON: Quoted object key expected but reached end of input at position 8',
    'Wrong Content-Type':
      'Content-Type must be application/json, got "text/plain"',
  })
  @ApiBody({
    description: 'Plant to add to the store',
    type: CreatePlantDto,
    required: true,
  })
  @ApiOkResponse({ description: 'plant response', type: PlantDto })
  async create(@Body() newPlant: CreatePlantDto): Promise<JsonText> {
    // no ETag: an idempotent replay could not know the version now (docs/decisions.md, "Updates")
    return new JsonText(plantJson(await this.plantsService.create(newPlant)));
  }

  @Get(':id')
  @RequireScopes('plants:read')
  @ApiOperation({
    operationId: 'findPlantById',
    summary: 'Returns the plant with this id',
  })
  @ApiOkResponse({
    description: 'plant response',
    type: PlantDto,
    headers: ETAG_HEADER,
  })
  @ApiIfNoneMatch('plant')
  @badRequest(BAD_PATH_ID)
  @NO_SUCH_PLANT
  async findOne(@Int64Param('id', PLANT_ID) id: bigint): Promise<JsonText> {
    // express answers 304 itself when If-None-Match names its ETag
    return answerOf(await this.plantsService.findOne(id));
  }

  @Patch(':id')
  @RequireScopes('plants:write')
  @ApiOperation({
    operationId: 'updatePlant',
    summary:
      'Changes the plant with this id, if it is still at the version If-Match names',
  })
  @ApiBody({
    description:
      'The fields to change: a field left out is kept, a tag of null is removed',
    type: UpdatePlantDto,
    required: true,
    examples: {
      rename: { summary: 'A new name', value: { name: 'Monstera adansonii' } },
      untag: { summary: 'No tag any more', value: { tag: null } },
    },
  })
  @ApiOkResponse({
    description: 'plant response: the plant as changed',
    type: PlantDto,
    headers: ETAG_HEADER,
  })
  @ApiIfMatch('plant')
  @badRequest({
    ...BAD_PATH_ID,
    'Nothing to change': NOTHING_TO_CHANGE,
    'Null name': 'name must not be null: leave it out to keep the name',
  })
  @NO_SUCH_PLANT
  async update(
    @Int64Param('id', PLANT_ID) id: bigint,
    @Body() changes: UpdatePlantDto,
    @Headers('if-match') ifMatch: string | undefined,
  ): Promise<JsonText> {
    return answerOf(
      await this.plantsService.update(
        id,
        versionsOf(ifMatch, 'plant'),
        changes,
      ),
    );
  }

  @Delete(':id')
  @HttpCode(HttpStatus.NO_CONTENT)
  @RequireScopes('plants:write')
  @ApiOperation({
    operationId: 'deletePlant',
    summary: 'Deletes the plant with this id',
  })
  @ApiNoContentResponse({ description: 'plant deleted' })
  @badRequest(BAD_PATH_ID)
  @NO_SUCH_PLANT
  async remove(@Int64Param('id', PLANT_ID) id: bigint): Promise<void> {
    await this.plantsService.remove(id);
  }
}
