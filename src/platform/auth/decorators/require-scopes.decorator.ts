import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiForbiddenResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ErrorBody } from '../../common/errors/error-body.dto';
import { errorExamples } from '../../common/errors/error-examples';
import { AUTH_MESSAGES, lacksScopesMessage } from '../auth-messages';
import type { Scope } from '../scopes';

export const REQUIRED_SCOPES_KEY = 'requiredScopes';

/**
 * The route needs a live bearer token holding every one of these scopes: at least one, since
 * "any valid token" is not an access rule (docs/conventions.md, "Access"). Bundles the
 * guard's metadata with the 401 and 403 answers it documents; the bearerAuth requirement
 * itself is the OpenAPI document's global one, as the guard is global.
 */
export function RequireScopes(...scopes: [Scope, ...Scope[]]) {
  return applyDecorators(
    SetMetadata(REQUIRED_SCOPES_KEY, scopes),
    ApiUnauthorizedResponse({
      description: 'No bearer token, or an unknown, revoked or expired one',
      type: ErrorBody,
      examples: errorExamples(401, {
        'No token': AUTH_MESSAGES.missingToken,
        'Empty token': AUTH_MESSAGES.emptyToken,
        'Another scheme': AUTH_MESSAGES.notBearer,
        'Unknown, revoked or expired token': AUTH_MESSAGES.rejectedToken,
      }),
    }),
    ApiForbiddenResponse({
      description: `The token lacks the scope ${scopes.join(', ')}`,
      type: ErrorBody,
      examples: errorExamples(403, {
        'Missing scope': lacksScopesMessage(scopes.slice(0, 1)),
      }),
    }),
  );
}
