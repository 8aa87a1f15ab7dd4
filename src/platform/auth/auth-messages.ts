import type { Scope } from './scopes';

/** What the bearer guard answers, in one place: the guard says it, the document quotes it. */
export const AUTH_MESSAGES = {
  missingToken: 'missing bearer token: send Authorization: Bearer <token>',
  emptyToken:
    'the bearer token is empty: send Authorization: Bearer <token> with the pst_ token that tokens create printed (a shell variable holding it may be unset)',
  notBearer:
    'the Authorization header must use the Bearer scheme: Authorization: Bearer <token>',
  rejectedToken: 'the bearer token is unknown, revoked or expired',
} as const;

export function lacksScopesMessage(missing: readonly Scope[]): string {
  return `the bearer token lacks the scope${missing.length > 1 ? 's' : ''} ${missing.join(' ')}`;
}

/** The 401 of an identity provider's access token that does not pass, and why. */
export function rejectedAccessTokenMessage(reason: string): string {
  return `the bearer token is not a valid access token of the identity provider: ${reason}`;
}
