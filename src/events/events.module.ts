import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { EventPublisher } from './event-publisher';
import { OutboxEvent } from './outbox-event.entity';

/** The outbox: its entity for the modules that read events (webhooks), and its publisher. */
@Module({
  imports: [TypeOrmModule.forFeature([OutboxEvent])],
  providers: [EventPublisher],
  exports: [TypeOrmModule, EventPublisher],
})
export class EventsModule {}
