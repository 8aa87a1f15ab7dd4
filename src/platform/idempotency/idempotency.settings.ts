import { setting, defineSettings } from '../config/module-settings';

/** How long keys and their answers are kept, and how long a running request holds its key. */
export const idempotencySettings = defineSettings('idempotency', {
  IDEMPOTENCY_TTL: setting.duration({
    default: '24h',
    example: '1h',
    description:
      'An Idempotency-Key and its answer are kept this long; a repeat within it gets the stored answer',
  }),
  IDEMPOTENCY_LEASE: setting.duration({
    default: '10s',
    example: '30s',
    description:
      'A request holding an Idempotency-Key keeps it from its repeats this long at most, should its process die',
  }),
});

export type IdempotencySettings = ReturnType<typeof idempotencySettings>;
