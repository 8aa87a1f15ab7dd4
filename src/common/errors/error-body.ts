import { ApiProperty } from '@nestjs/swagger';

/** The spec's Error object: every failure of every layer is answered with one. */
export class ErrorBody {
  /** The HTTP status code of the response. */
  @ApiProperty({ type: 'integer', format: 'int32', example: 400 })
  error!: number;

  /** One sentence naming what is wrong and where. */
  @ApiProperty({ example: 'name must be a string' })
  message!: string;
}
