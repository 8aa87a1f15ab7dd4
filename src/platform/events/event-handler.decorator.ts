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
 * both back, and the event is tried again later, the events after it waiting their turn,
 * until its attempts run out: then it is skipped (EventHandlerOptions).
 */
export interface HandlesEvents<Payload = unknown> {
  handle(event: HandledEvent<Payload>): Promise<void>;
}

/** How a handler retries an event that failed, and when it gives up on it. */
export interface EventHandlerOptions {
  /**
   * Attempts at one event before it is skipped (kept aside for an operator, and the events
   * after it handled): 7 unless said, the last about a minute after the first failure.
   */
  attempts?: number;
  /** The pause after the first failure, doubling up to 5 minutes: `1s` unless said. */
  firstRetry?: string | number;
}

/** What `EventHandler` declares, which EventHandlersService finds the handlers by. */
export interface EventHandlerDeclaration {
  name: string;
  events: readonly EventDefinition[];
  options: EventHandlerOptions;
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
  options: EventHandlerOptions = {},
): ClassDecorator {
  return applyDecorators(
    Injectable(),
    EventHandlerMark({
      name,
      events,
      options,
    }),
  );
}
