import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { ApiServiceUnavailableResponse, ApiTags } from '@nestjs/swagger';
import {
  HealthCheck,
  HealthCheckService,
  TypeOrmHealthIndicator,
} from '@nestjs/terminus';
import { Public } from '../auth/decorators/public.decorator';
import { ErrorBody } from '../common/errors/error-body';

@ApiTags('health')
@Public()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly database: TypeOrmHealthIndicator,
  ) {}

  /** The process is up and serving HTTP. */
  @Get('live')
  live() {
    return { status: 'ok' };
  }

  /** The service can reach its database. */
  @Get('ready')
  @HealthCheck()
  @ApiServiceUnavailableResponse({
    description: 'The database is unreachable',
    type: ErrorBody,
  })
  async ready() {
    try {
      return await this.health.check([
        () => this.database.pingCheck('database', { timeout: 2000 }),
      ]);
    } catch {
      throw new ServiceUnavailableException('the database is unreachable');
    }
  }
}
