/** Safe retries: `@Idempotent()` on a create, and the stored answer of the request that runs. */
export { currentIdempotencyKey } from './idempotency.runner';
export { IdempotencyStore } from './idempotency.store';
export { Idempotent } from './idempotent.decorator';
