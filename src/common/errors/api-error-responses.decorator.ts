import { applyDecorators } from '@nestjs/common';
import {
  ApiInternalServerErrorResponse,
  ApiServiceUnavailableResponse,
  ApiTooManyRequestsResponse,
} from '@nestjs/swagger';
import { ErrorBody } from './error-body.dto';

/** The failures any operation can meet, documented once per controller (D1). */
export function ApiServiceErrorResponses() {
  return applyDecorators(
    ApiTooManyRequestsResponse({
      description:
        'Rate limit hit (per token, or per client address without one); retry after Retry-After seconds',
      type: ErrorBody,
      headers: {
        'Retry-After': {
          description: 'Seconds until the limit lets requests through again',
          schema: { type: 'integer' },
        },
      },
    }),
    ApiInternalServerErrorResponse({
      description: 'A fault of the service itself',
      type: ErrorBody,
    }),
    ApiServiceUnavailableResponse({
      description: 'The database is unavailable',
      type: ErrorBody,
    }),
  );
}
