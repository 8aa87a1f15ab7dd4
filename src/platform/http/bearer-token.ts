import type { Request } from 'express';

/** `Authorization: Bearer <token>`, the scheme in any case (RFC 7235). */
const BEARER_CREDENTIALS = /^Bearer +(\S+) *$/i;

/** `Authorization: Bearer` with nothing after it, or only white space. */
const EMPTY_BEARER_CREDENTIALS = /^Bearer\s*$/i;

/** Whether the request names the Bearer scheme but no token: an unset shell variable, mostly. */
export function hasEmptyBearer(request: Request): boolean {
  return EMPTY_BEARER_CREDENTIALS.test(request.headers.authorization ?? '');
}

/** The bearer token a request presents, or undefined when it presents none. */
export function bearerTokenOf(request: Request): string | undefined {
  return BEARER_CREDENTIALS.exec(request.headers.authorization ?? '')?.[1];
}
