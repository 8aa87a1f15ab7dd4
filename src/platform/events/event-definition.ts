import type { Type } from '@nestjs/common';

/**
 * An event the service publishes, as its module declares it (`EventsModule.forFeature`): what the webhook
 * subscriptions, the CLI and the OpenAPI document's `webhooks` know about it. A service
 * publishes it with `EventPublisher.publish(definition, payload)` inside its transaction, the
 * payload typed by the definition; the plants' events are written by triggers on their table
 * instead (event-triggers.ts), which cost an insert nothing while no one subscribes.
 */
export interface EventDefinition<Payload = unknown> {
  /** `<resource>.<past participle>`, such as `plant.added`. */
  type: string;
  /** The key of its entry in the OpenAPI document's `webhooks`. */
  webhookName: string;
  operationId: string;
  summary: string;
  description: string;
  /** The DTO whose schema describes the delivered body. */
  payload: Type<Payload>;
  payloadDescription: string;
}
