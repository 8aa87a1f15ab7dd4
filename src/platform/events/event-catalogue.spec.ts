import { DeclaredEvents, EventCatalogue } from './event-catalogue';
import type { EventDefinition } from './event-definition';

const event = (type: string): EventDefinition => ({
  type,
  webhookName: type,
  operationId: type.replace('.', ''),
  summary: type,
  description: type,
  payload: Object,
  payloadDescription: type,
});

const plants = new DeclaredEvents([
  event('plant.added'),
  event('plant.deleted'),
]);
const orders = new DeclaredEvents([event('order.placed')]);

describe('EventCatalogue', () => {
  it('lists every declared event by type, whatever order the declarations came in, one met twice once', () => {
    const catalogue = new EventCatalogue([plants, orders, plants]);
    expect(catalogue.types).toEqual([
      'order.placed',
      'plant.added',
      'plant.deleted',
    ]);
    expect(new EventCatalogue([orders, plants]).types).toEqual(catalogue.types);
    expect(catalogue.has('order.placed')).toBe(true);
    expect(catalogue.has('order.shipped')).toBe(false);
  });

  it('refuses a type two modules declare', () => {
    expect(
      () =>
        new EventCatalogue([
          plants,
          new DeclaredEvents([event('plant.added')]),
        ]),
    ).toThrow(
      'event type plant.added is declared twice: each event belongs to one module',
    );
  });

  it.each(['plant', 'Plant.added', 'plant.', 'plant.added.now', 'plant:added'])(
    'refuses the type %j, saying the form it must have',
    (type) => {
      expect(
        () => new EventCatalogue([new DeclaredEvents([event(type)])]),
      ).toThrow(`event type "${type}" is not <resource>.<past participle>`);
    },
  );
});
