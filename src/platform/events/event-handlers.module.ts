import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { EventHandlerState } from './event-handler.entity';
import { EventHandlersService } from './event-handlers.service';
import { EventsModule } from './events.module';
import { SkippedEventsModule } from './skipped-events.module';

/**
 * Runs the `@EventHandler()` providers of every module (docs/conventions.md, "Reacting to
 * events"). A module declares a handler as one of its providers; nothing else is registered.
 */
@Module({
  imports: [
    DiscoveryModule,
    EventsModule,
    TypeOrmModule.forFeature([EventHandlerState]),
    SkippedEventsModule,
  ],
  providers: [EventHandlersService],
})
export class EventHandlersModule {}
