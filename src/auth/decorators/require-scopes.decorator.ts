import { applyDecorators, SetMetadata } from '@nestjs/common';
import {
  ApiBearerAuth,
  ApiForbiddenResponse,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';
import { ErrorBody } from '../../common/errors/error-body';
import type { Scope } from '../scopes';

export const REQUIRED_SCOPES_KEY = 'requiredScopes';

/** A bearer token with these scopes is needed; bundles the guard's metadata and its docs. */
export function RequireScopes(...scopes: Scope[]) {
  return applyDecorators(
    SetMetadata(REQUIRED_SCOPES_KEY, scopes),
    ApiBearerAuth('bearerAuth'),
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
