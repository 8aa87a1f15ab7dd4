import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiForbiddenResponse, ApiUnauthorizedResponse } from '@nestjs/swagger';
import { ErrorBody } from '../../common/errors/error-body.dto';
import type { Scope } from '../scopes';

export const REQUIRED_SCOPES_KEY = 'requiredScopes';

/**
 * A bearer token with these scopes is needed; bundles the guard's metadata and its docs. The
 * bearerAuth requirement itself is the OpenAPI document's global one, as the guard's is global.
 */
export function RequireScopes(...scopes: Scope[]) {
  return applyDecorators(
    SetMetadata(REQUIRED_SCOPES_KEY, scopes),
    ApiUnauthorizedResponse({
      description: 'No bearer token, or an unknown, revoked or expired one',
      type: ErrorBody,
    }),
    ApiForbiddenResponse({
      description: `The token lacks the scope ${scopes.join(', ')}`,
      type: ErrorBody,
    }),
  );
}
