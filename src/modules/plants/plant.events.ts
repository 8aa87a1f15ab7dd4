import type { EventDefinition } from '../../platform/events';
import { CreatePlantDto } from './dto/create-plant.dto';

/**
 * Declared in PlantsModule; written by the plants table's triggers (the EventOutbox and
 * PlantVersions migrations), not by EventPublisher. The body is the plant.
 */
export const PLANT_ADDED: EventDefinition<CreatePlantDto> = {
  type: 'plant.added',
  // the upstream document's name for it
  webhookName: '/plant/webhook',
  operationId: 'plantAdded',
  summary: 'A plant was added to the store',
  description:
    'Sent after a plant is added, with the NewPlant that was stored.',
  payload: CreatePlantDto,
  payloadDescription: 'Information about a new plant in the system',
};

export const PLANT_DELETED: EventDefinition<CreatePlantDto> = {
  type: 'plant.deleted',
  webhookName: 'plant.deleted',
  operationId: 'plantDeleted',
  summary: 'A plant was deleted from the store',
  description:
    'Sent after a plant is deleted, with the plant as it was stored. Its body has the shape of plant.added: the `webhook-event-type` header tells them apart.',
  payload: CreatePlantDto,
  payloadDescription: 'The plant that was deleted, with its exact id',
};

export const PLANT_UPDATED: EventDefinition<CreatePlantDto> = {
  type: 'plant.updated',
  webhookName: 'plant.updated',
  operationId: 'plantUpdated',
  summary: 'A plant was changed',
  description:
    'Sent after a plant is changed (`PATCH /plants/{id}`), with the plant as it is now. Its body has the shape of plant.added: the `webhook-event-type` header tells them apart.',
  payload: CreatePlantDto,
  payloadDescription: 'The plant as changed, with its exact id',
};

export const PLANT_EVENTS: EventDefinition[] = [
  PLANT_ADDED,
  PLANT_DELETED,
  PLANT_UPDATED,
];
