import type { Request } from 'express';

/** `Authorization: Bearer <token>`, the scheme in any case (RFC 7235). */
const BEARER_CREDENTIALS = /^Bearer +(\S+) *$/i;

/** The bearer token a request presents, or undefined when it presents none. */
export function bearerTokenOf(request: Request): string | undefined {
  return BEARER_CREDENTIALS.exec(request.headers.authorization ?? '')?.[1];
}
