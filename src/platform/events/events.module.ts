import { Module, type DynamicModule } from '@nestjs/common';
import { DiscoveryModule, DiscoveryService } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { declarationsOf } from '../common/modules/declarations';
import { DeclaredEvents, EventCatalogue } from './event-catalogue';
import type { EventDefinition } from './event-definition';
import { EventLog } from './event-log.entity';
import { EventPublisher } from './event-publisher';
import { OutboxEvent } from './outbox-event.entity';

/**
 * The outbox: its entity for the modules that read events (webhooks), the publisher, and the
 * catalogue of every event. A module that publishes events imports
 * `EventsModule.forFeature([...its events])`: the catalogue finds them at boot, and the
 * module gets the publisher.
 */
@Module({
  imports: [TypeOrmModule.forFeature([OutboxEvent, EventLog]), DiscoveryModule],
  providers: [
    EventPublisher,
    {
      provide: EventCatalogue,
      inject: [DiscoveryService],
      useFactory: (discovery: DiscoveryService) =>
        new EventCatalogue(declarationsOf(discovery, DeclaredEvents)),
    },
  ],
  exports: [TypeOrmModule, EventPublisher, EventCatalogue],
})
export class EventsModule {
  static forFeature(events: readonly EventDefinition[]): DynamicModule {
    return {
      module: EventDeclarationModule,
      imports: [EventsModule],
      providers: [
        {
          provide: `events ${events.map(({ type }) => type).join(' ')}`,
          useValue: new DeclaredEvents(events),
        },
      ],
      exports: [EventsModule],
    };
  }
}

/**
 * What `EventsModule.forFeature` returns: a module's declaration beside the one EventsModule
 * (its publisher and catalogue, which it re-exports), not another instance of it.
 */
@Module({})
class EventDeclarationModule {}
