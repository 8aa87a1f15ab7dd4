import { StartupError } from '../common/errors/startup-error';
import type { EventDefinition } from './event-definition';

const EVENT_TYPE_FORMAT = /^[a-z][a-z0-9-]*\.[a-z][a-z0-9-]*$/;

/** The events one module publishes, declared with `EventsModule.forFeature` in its module file. */
export class DeclaredEvents {
  constructor(readonly events: readonly EventDefinition[]) {}
}

/**
 * Every event the service publishes, gathered at boot from the modules' declarations: what
 * the webhook subscriptions, the CLI and the OpenAPI document's `webhooks` know about.
 */
export class EventCatalogue {
  readonly events: readonly EventDefinition[];
  readonly types: readonly string[];

  /**
   * One declaration met through two providers (the CLI's context) counts once. Events are
   * listed by type: the order the modules' declarations arrive in depends on how the app is
   * put together (the service, a test's app, the document's export), and the document must not.
   */
  constructor(declarations: readonly DeclaredEvents[]) {
    this.events = [...new Set(declarations)]
      .flatMap(({ events }) => events)
      .sort((first, second) => (first.type < second.type ? -1 : 1));
    this.types = this.events.map(({ type }) => type);
    for (const [index, type] of this.types.entries()) {
      if (!EVENT_TYPE_FORMAT.test(type)) {
        throw new StartupError(
          `event type "${type}" is not <resource>.<past participle> in lowercase, such as plant.added`,
        );
      }
      if (this.types.indexOf(type) !== index) {
        throw new StartupError(
          `event type ${type} is declared twice: each event belongs to one module`,
        );
      }
    }
  }

  has(type: string): boolean {
    return this.types.includes(type);
  }
}

/**
 * The schema `enum` of a DTO field that holds event types. Which types exist is known only at
 * boot, after the DTOs' decorators ran: the OpenAPI document replaces this with the
 * catalogue's types (and an array's `maxItems` with their count), and a service that takes
 * types checks them with `EventCatalogue.has`.
 */
export const EVENT_TYPE_ENUM: readonly string[] = Object.freeze([
  '<declared event type>',
]);

/** What a list of event types may hold before it is checked against the catalogue. */
export const MAX_EVENT_TYPES = 100;
