import type { EventTrigger } from '../../events/event-triggers';

/**
 * The plant events of the EventOutbox migrations, the same on both engines. Frozen with those
 * migrations: a later change to these triggers is a migration of its own.
 */
export const PLANT_ADDED: EventTrigger = {
  type: 'plant.added',
  table: 'plants',
  on: 'INSERT',
  fields: { id: 'id', name: 'name', tag: 'tag' },
};

export const PLANT_DELETED: EventTrigger = {
  ...PLANT_ADDED,
  type: 'plant.deleted',
  on: 'DELETE',
};
