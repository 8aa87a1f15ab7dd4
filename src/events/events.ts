import { PLANT_EVENTS } from '../plants/plant.events';
import type { EventDefinition } from './event-definition';

/** Every event the service publishes; a module that publishes events adds its list here. */
export const EVENTS: readonly EventDefinition[] = [...PLANT_EVENTS];

export const EVENT_TYPES: readonly string[] = EVENTS.map(({ type }) => type);

export function isEventType(value: string): boolean {
  return EVENT_TYPES.includes(value);
}
