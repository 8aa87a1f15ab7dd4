import type { ScopeDefinitions } from '../../platform/auth';

export const PLANT_SCOPES = {
  'plants:read': { description: 'list and read plants', byDefault: true },
  'plants:write': {
    description: 'add, change and delete plants',
    byDefault: true,
  },
} as const satisfies ScopeDefinitions;
