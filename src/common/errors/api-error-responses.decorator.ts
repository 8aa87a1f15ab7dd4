import { applyDecorators } from '@nestjs/common';
import {
  ApiInternalServerErrorResponse,
  ApiServiceUnavailableResponse,
} from '@nestjs/swagger';
import { ErrorBody } from './error-body.dto';

/** The failures any operation can meet, documented once per controller (D1). */
export function ApiServiceErrorResponses() {
  return applyDecorators(
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
