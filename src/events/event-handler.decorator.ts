import { applyDecorators, Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { EventDefinition } from './event-definition';

/** An event as a handler gets it: its int64 values exact, as bigints. */
export interface HandledEvent<Payload = unknown> {
  id: string;
  type: string;
  /** Its place in the event log: handlers get events in this order. */
  seq: bigint;
  createdAt: Date;
  payload: Payload;
}

/**
 * A handler of other modules' events: a provider marked `@EventHandler(name, [EVENTS])`. Its
 * `handle` runs in a transaction of its own, which also moves its cursor past the event: its
 * writes and its progress commit together, so an event's effects are made once. A throw rolls
 * both back, and the event is tried again later, the events after it waiting their turn.
 */
export interface HandlesEvents<Payload = unknown> {
  handle(event: HandledEvent<Payload>): Promise<void>;
}

/** What `EventHandler` declares, which EventHandlers finds the handlers by. */
export interface EventHandlerDeclaration {
  name: string;
  events: readonly EventDefinition[];
}

export const EventHandlerMark =
  DiscoveryService.createDecorator<EventHandlerDeclaration>();

/**
 * Marks a provider as a handler of `events`, by any module (docs/conventions.md,
 * "Reacting to events"). The name is its row in the database, its cursor, and its label in
 * logs and metrics: `<module>.<what>`, lowercase words joined by dots or dashes.
 */
export function EventHandler<Payload>(
  name: string,
  events: readonly EventDefinition<Payload>[],
): ClassDecorator {
  return applyDecorators(
    Injectable(),
    EventHandlerMark({ name, events: events as readonly EventDefinition[] }),
  );
}
