import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { SkippedEvent } from './skipped-event.entity';
import { SkippedEventsService } from './skipped-events.service';

/** The events handlers gave up on, for the handlers' loop, the metrics and the CLI. */
@Module({
  imports: [TypeOrmModule.forFeature([SkippedEvent])],
  providers: [SkippedEventsService],
  exports: [TypeOrmModule, SkippedEventsService],
})
export class SkippedEventsModule {}
