import type { Type } from '@nestjs/common';

/**
 * An event the service publishes, as the catalogue (events.ts) lists it: what the webhook
 * subscriptions, the CLI and the OpenAPI document's `webhooks` know about it. The event itself
 * is written by a trigger on the changed table (event-triggers.ts), in the module's migrations.
 */
export interface EventDefinition {
  /** `<resource>.<past participle>`, such as `plant.added`. */
  type: string;
  /** The key of its entry in the OpenAPI document's `webhooks`. */
  webhookName: string;
  operationId: string;
  summary: string;
  description: string;
  /** The DTO whose schema describes the delivered body. */
  payload: Type<unknown>;
  payloadDescription: string;
}
