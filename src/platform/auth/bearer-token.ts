import type { Request } from 'express';
import { AUTH_MESSAGES } from './auth-messages';
import type { Unauthenticated } from './bearer';

/** `Authorization: Bearer <token>`, the scheme in any case (RFC 7235). */
const BEARER_CREDENTIALS = /^Bearer +(\S+) *$/i;

/** `Authorization: Bearer` with nothing after it, or only white space. */
const EMPTY_BEARER_CREDENTIALS = /^Bearer\s*$/i;

const MISSING: Unauthenticated = {
  reason: 'missing',
  message: AUTH_MESSAGES.missingToken,
};
// an unset shell variable, mostly
const EMPTY: Unauthenticated = {
  reason: 'empty',
  message: AUTH_MESSAGES.emptyToken,
};
const NOT_BEARER: Unauthenticated = {
  reason: 'not_bearer',
  message: AUTH_MESSAGES.notBearer,
};

/** The bearer token a request presents, or undefined when it presents none. */
export function bearerTokenOf(request: Request): string | undefined {
  return BEARER_CREDENTIALS.exec(request.headers.authorization ?? '')?.[1];
}

/** Why a request presents no bearer token: no Authorization, an empty one, another scheme. */
export function absentTokenOf(request: Request): Unauthenticated {
  const { authorization } = request.headers;
  if (authorization === undefined) return MISSING;
  return EMPTY_BEARER_CREDENTIALS.test(authorization) ? EMPTY : NOT_BEARER;
}
