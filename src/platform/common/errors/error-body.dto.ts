import { ApiProperty, ApiSchema } from '@nestjs/swagger';

/** The spec's Error object: every failure of every layer is answered with one. */
@ApiSchema({ name: 'Error' })
export class ErrorBody {
  /** Numeric error value: the HTTP status code of the response */
  @ApiProperty({
    type: 'integer',
    format: 'int32',
    minimum: 400,
    maximum: 599,
    example: 400,
  })
  error!: number;

  /**
   * Error message text: one sentence naming what is wrong and where
   * @example "name is required"
   */
  message!: string;
}
