import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { OutboxEvent } from './outbox-event.entity';

/** The outbox's entity, for the modules that read events (webhooks). */
@Module({
  imports: [TypeOrmModule.forFeature([OutboxEvent])],
  exports: [TypeOrmModule],
})
export class EventsModule {}
