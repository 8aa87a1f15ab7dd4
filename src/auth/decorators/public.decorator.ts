import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC_KEY = 'isPublic';

/** Opens a route to callers without a token (health probes, API docs). */
export const Public = () => SetMetadata(IS_PUBLIC_KEY, true);
