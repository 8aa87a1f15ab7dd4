import { applyDecorators, SetMetadata } from '@nestjs/common';
import { DECORATORS } from '@nestjs/swagger';

export const IS_PUBLIC_KEY = 'isPublic';

/**
 * Opens a route to callers without a token (health probes), and declares it so in the OpenAPI
 * document with `security: []`, which overrides the document's global bearerAuth requirement.
 */
export const Public = () =>
  applyDecorators(
    SetMetadata(IS_PUBLIC_KEY, true),
    SetMetadata(DECORATORS.API_SECURITY, []),
  );
