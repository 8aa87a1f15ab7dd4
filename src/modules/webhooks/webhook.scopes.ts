import type { ScopeDefinitions } from '../../platform/auth';

export const WEBHOOK_SCOPES = {
  'webhooks:manage': {
    description:
      'create, list and delete webhook subscriptions and read their deliveries',
    byDefault: false,
  },
} as const satisfies ScopeDefinitions;
