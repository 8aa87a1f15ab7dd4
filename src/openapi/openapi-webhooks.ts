import { isDeepStrictEqual } from 'node:util';
import {
  getSchemaPath,
  type OpenAPIObject,
  type SchemaObject,
} from '@nestjs/swagger';
import {
  EVENT_TYPE_ENUM,
  type EventCatalogue,
} from '../platform/events/event-catalogue';
import { EVENT_TYPE_HEADER } from '../modules/webhooks/webhook-sender';

const WEBHOOK_HEADERS = [
  [
    'webhook-id',
    'The delivery id, the same on every retry: use it to drop duplicates',
    { type: 'string', pattern: '^msg_[0-9a-f]{32}$' },
  ],
  [
    'webhook-timestamp',
    'Seconds since the Unix epoch when this attempt was signed',
    { type: 'string', pattern: '^[0-9]{1,12}$' },
  ],
  [
    'webhook-signature',
    "`v1,` and the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the subscription's `whsec_` secret (Standard Webhooks)",
    { type: 'string', pattern: '^v1,[A-Za-z0-9+/]{43}=$' },
  ],
] as const;

/**
 * Fields of event types name EVENT_TYPE_ENUM, since the types are known only at boot: the
 * declared ones take its place, and a list of them holds at most as many. Each new module's
 * event adds one: `x-enum-may-grow` says so to readers, and to the release check
 * (scripts/breaking-changes.js), which does not count that growth as breaking.
 */
const MAY_GROW = { 'x-enum-may-grow': true };

export function listEventTypes(
  document: OpenAPIObject,
  types: readonly string[],
) {
  const isPlaceholder = (schema: unknown) =>
    isDeepStrictEqual((schema as SchemaObject | undefined)?.enum, [
      ...EVENT_TYPE_ENUM,
    ]);
  // new objects: the generated ones may be the decorators' own, shared by every build
  for (const schema of Object.values(document.components?.schemas ?? {})) {
    const properties = (schema as SchemaObject).properties ?? {};
    for (const [name, property] of Object.entries(properties) as [
      string,
      SchemaObject,
    ][]) {
      if (isPlaceholder(property)) {
        properties[name] = { ...property, enum: [...types], ...MAY_GROW };
      } else if (isPlaceholder(property.items)) {
        properties[name] = {
          ...property,
          items: { ...property.items, enum: [...types], ...MAY_GROW },
          maxItems: types.length,
          ...MAY_GROW,
        };
      }
    }
  }
}

/**
 * @nestjs/swagger has no decorator for OpenAPI 3.1 webhooks, so every declared event is added
 * after generation, with the schema of its payload DTO.
 */
export function addWebhooks(
  document: OpenAPIObject,
  events: EventCatalogue,
): void {
  document.webhooks = Object.fromEntries(
    events.events.map((event) => [
      event.webhookName,
      {
        post: {
          operationId: event.operationId,
          summary: event.summary,
          description: `${event.description} Sent to every subscription that receives ${event.type} (\`POST /webhooks/subscriptions\`, or \`node dist/cli.js webhooks add\`), following the Standard Webhooks specification. Any 2xx answer acknowledges it; anything else is retried with exponential backoff.`,
          parameters: [
            ...WEBHOOK_HEADERS.map(([name, description, schema]) => ({
              name,
              description,
              schema,
            })),
            {
              name: EVENT_TYPE_HEADER,
              description: `The event type, always \`${event.type}\` here. The body does not say it, and the signature does not cover it: see the webhook-id.`,
              schema: { type: 'string' as const, const: event.type },
            },
          ].map((parameter) => ({
            ...parameter,
            in: 'header' as const,
            required: true,
          })),
          requestBody: {
            description: event.payloadDescription,
            required: true,
            content: {
              'application/json': {
                schema: { $ref: getSchemaPath(event.payload) },
              },
            },
          },
          responses: {
            '200': {
              description:
                'Return a 200 status to indicate that the data was received successfully',
            },
          },
          security: [],
        },
      },
    ]),
  );
}
