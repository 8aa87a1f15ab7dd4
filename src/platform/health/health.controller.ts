import {
  Controller,
  Get,
  Header,
  ServiceUnavailableException,
} from '@nestjs/common';
import {
  ApiOkResponse,
  ApiOperation,
  ApiServiceUnavailableResponse,
  ApiTags,
} from '@nestjs/swagger';
import { DataSource } from 'typeorm';
import { Public } from '../auth/decorators/public.decorator';
import { IdentityProviderTokensService } from '../auth/oidc/identity-provider-tokens.service';
import { ErrorBody } from '../common/errors/error-body.dto';
import { errorExamples } from '../common/errors/error-examples';
import {
  SHUTTING_DOWN_MESSAGE,
  ShutdownGateService,
} from '../http/shutdown-gate.service';
import { DatabaseAvailabilityService } from '../database/database-availability.service';
import { PortableDataSource } from '../database/portable-data-source';
import { SchemaCompatibilityService } from '../database/schema-compatibility.service';
import { HealthStatusDto } from './dto/health-status.dto';

const DATABASE_UNREACHABLE = 'the database is unreachable';

/**
 * Callers of readiness within this long of a successful database ping share its answer, and
 * callers during a ping wait for it: probes from many orchestrators (or anyone, as the probes
 * are not rate limited) cost one ping a second at most.
 */
export const READINESS_REUSE_MS = 1000;

/**
 * How long readiness waits for the database's answer: below Kubernetes' default probe timeout
 * (1 s), so that a database that stops answering reads as 503, not as a probe that timed out.
 */
export const READINESS_PING_TIMEOUT_MS = 800;

@ApiTags('health')
@Public()
@Controller('health')
export class HealthController {
  private latest?: { startedAt: number; answer: Promise<HealthStatusDto> };

  constructor(
    private readonly dataSource: DataSource,
    private readonly shutdown: ShutdownGateService,
    private readonly availability: DatabaseAvailabilityService,
    private readonly identityProvider: IdentityProviderTokensService,
    private readonly schema: SchemaCompatibilityService,
  ) {}

  @Get('live')
  @ApiOperation({
    operationId: 'getLiveness',
    summary: 'Liveness: the process is up and serving HTTP',
  })
  @Header('Cache-Control', 'no-store')
  @ApiOkResponse({ description: 'The process is live', type: HealthStatusDto })
  live(): HealthStatusDto {
    return { status: 'ok' };
  }

  @Get('ready')
  @ApiOperation({
    operationId: 'getReadiness',
    summary:
      "Readiness: the service can reach its database, its code fits the database's schema (and, with OIDC_ISSUER, it has its identity provider's keys), and it is not shutting down",
  })
  @Header('Cache-Control', 'no-store')
  @ApiOkResponse({ description: 'The database answers', type: HealthStatusDto })
  @ApiServiceUnavailableResponse({
    description:
      "The database is unreachable, this build's code does not fit the database's schema, the identity provider's keys could not be fetched, or the service is shutting down",
    type: ErrorBody,
    examples: errorExamples(503, {
      'Database unreachable': DATABASE_UNREACHABLE,
      'Schema of another release':
        'this build\'s code does not fit the database\'s schema, which another release migrated: column webhook_subscriptions.owed_since does not exist. Run the release that migrated it, or one that knows its schema (docs/operations.md, "Upgrades")',
      'Identity provider unreachable':
        "the identity provider's keys are out of reach (https://idp.example.com/.well-known/openid-configuration: fetch failed: connect ECONNREFUSED 203.0.113.7:443)",
      'Shutting down': SHUTTING_DOWN_MESSAGE,
    }),
  })
  ready(): Promise<HealthStatusDto> {
    if (this.shutdown.isDraining) {
      throw new ServiceUnavailableException(SHUTTING_DOWN_MESSAGE);
    }
    const now = Date.now();
    if (!this.latest || now - this.latest.startedAt >= READINESS_REUSE_MS) {
      const latest = { startedAt: now, answer: this.checkDependencies() };
      this.latest = latest;
      // a failure is not kept: the next caller asks again, so readiness recovers at once
      latest.answer.catch(() => {
        if (this.latest === latest) this.latest = undefined;
      });
    }
    return this.latest.answer;
  }

  private async checkDependencies(): Promise<HealthStatusDto> {
    const answer = await this.pingDatabase();
    const misfit = await this.schema.problemNow();
    if (misfit !== undefined) throw new ServiceUnavailableException(misfit);
    if (!this.identityProvider.enabled) return answer;
    try {
      await this.identityProvider.ready();
    } catch (error) {
      throw new ServiceUnavailableException((error as Error).message);
    }
    return {
      ...answer,
      info: { ...answer.info, identityProvider: { status: 'up' } },
    };
  }

  private async pingDatabase(): Promise<HealthStatusDto> {
    try {
      // apart from the pool: requests waiting their turn are no outage
      await (this.dataSource as PortableDataSource).ping(
        READINESS_PING_TIMEOUT_MS,
      );
    } catch {
      this.availability.wentAway('readiness found it unreachable');
      throw new ServiceUnavailableException(DATABASE_UNREACHABLE);
    }
    this.availability.cameBack();
    return { status: 'ok', info: { database: { status: 'up' } } };
  }
}
