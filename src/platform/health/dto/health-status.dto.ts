import { ApiProperty, ApiPropertyOptional, ApiSchema } from '@nestjs/swagger';

/** What a probe reports when it passes. */
@ApiSchema({ name: 'HealthStatus' })
export class HealthStatusDto {
  /** Always "ok" in a 200 answer */
  @ApiProperty({ enum: ['ok'], example: 'ok' })
  status!: string;

  /** Each dependency checked, by name, with its status */
  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    example: { database: { status: 'up' } },
  })
  info?: Record<string, unknown>;
}
