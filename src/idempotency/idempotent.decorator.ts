import { applyDecorators, SetMetadata, UseInterceptors } from '@nestjs/common';
import { ApiHeader } from '@nestjs/swagger';
import { IDEMPOTENCY_KEY_HEADER, MAX_KEY_LENGTH } from './idempotency-key';
import {
  IDEMPOTENT_OPTIONS,
  IdempotencyInterceptor,
  type IdempotentOptions,
} from './idempotency.interceptor';

/**
 * Makes a create safe to send again: with an `Idempotency-Key`, a repeat gets the first
 * request's answer instead of running again (docs/decisions.md, "Idempotency keys"). For POST
 * routes that need a token; the OpenAPI document gains the header, `Idempotent-Replayed` and
 * the 409 of a repeat that comes while the first still runs.
 */
export function Idempotent(options: IdempotentOptions = {}): MethodDecorator {
  return applyDecorators(
    SetMetadata(IDEMPOTENT_OPTIONS, options),
    UseInterceptors(IdempotencyInterceptor),
    ApiHeader({
      name: IDEMPOTENCY_KEY_HEADER,
      required: false,
      description:
        'A key of your choice, unique per request (a UUID, say), to send the request again safely: a repeat with the same key, method, path and body gets the first answer, with `Idempotent-Replayed: true`, and changes nothing. Kept for 24 hours by default',
      schema: {
        type: 'string',
        minLength: 1,
        maxLength: MAX_KEY_LENGTH,
        pattern: '^[\\x21-\\x7E]+$',
      },
      example: '4f1c7a52-3b7e-4a7e-9c1d-2f6b8e0d9a31',
    }),
  );
}
