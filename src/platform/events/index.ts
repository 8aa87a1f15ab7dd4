/** Events: what a module declares and publishes, the triggers that write them, and the outbox. */
export {
  EVENT_TYPE_ENUM,
  EventCatalogue,
  MAX_EVENT_TYPES,
} from './event-catalogue';
export type { EventDefinition } from './event-definition';
export {
  EventHandler,
  type EventHandlerOptions,
  type HandledEvent,
  type HandlesEvents,
} from './event-handler.decorator';
export { EventHandlerState } from './event-handler.entity';
export { HANDLER_RETIRED_AFTER_MS } from './event-handlers.service';
export { EventLog } from './event-log.entity';
export { EventPublisher } from './event-publisher';
export {
  createEventTrigger,
  dropEventTrigger,
  type EventTrigger,
} from './event-triggers';
export { EventsModule } from './events.module';
export { OutboxEvent } from './outbox-event.entity';
