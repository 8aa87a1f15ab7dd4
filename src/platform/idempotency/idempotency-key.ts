import { createHash } from 'node:crypto';
import { BadRequestException, type RawBodyRequest } from '@nestjs/common';
import type { Request } from 'express';

/** The request header a client names its attempt with (draft-ietf-httpapi-idempotency-key-header). */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

export const MAX_KEY_LENGTH = 255;

/**
 * The request's Idempotency-Key; undefined without one. A key is 1 to 255 visible ASCII
 * characters (0x21 to 0x7E, so no spaces): anything else is a 400 that says what is wrong.
 */
export function idempotencyKeyOf(request: Request): string | undefined {
  const value = request.headers['idempotency-key'];
  if (value === undefined) return undefined;
  const key = String(value);
  // Node joins a repeated header into one value; headersDistinct, built on first use and only
  // here, tells them apart (an injected request has none)
  const sent =
    (
      request.headersDistinct as
        | Partial<typeof request.headersDistinct>
        | undefined
    )?.['idempotency-key']?.length ?? 1;
  if (sent > 1) {
    throw new BadRequestException(
      `send one ${IDEMPOTENCY_KEY_HEADER} header, got ${sent}`,
    );
  }
  if (key.length === 0 || key.length > MAX_KEY_LENGTH) {
    throw new BadRequestException(
      `${IDEMPOTENCY_KEY_HEADER} must be 1 to ${MAX_KEY_LENGTH} characters long, got ${key.length}`,
    );
  }
  const invalid = /[^\x21-\x7e]/.exec(key);
  if (invalid) {
    throw new BadRequestException(
      `${IDEMPOTENCY_KEY_HEADER} must be visible ASCII characters (no spaces), got ${JSON.stringify(invalid[0])} at character ${invalid.index + 1}`,
    );
  }
  return key;
}

/**
 * What makes two requests the same request: the method, the path with its query, and the
 * exact bytes of the body, as SHA-256 in base64url (43 characters).
 */
export function fingerprintOf(request: RawBodyRequest<Request>): string {
  return createHash('sha256')
    .update(`${request.method} ${request.originalUrl}\n`)
    .update(request.rawBody ?? Buffer.alloc(0))
    .digest('base64url');
}
