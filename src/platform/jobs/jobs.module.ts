import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { JobScheduler } from './job-scheduler';
import { ScheduledJob } from './scheduled-job.entity';

/**
 * Runs the `@Job()` providers of every module once per tick across all instances
 * (docs/conventions.md, "Periodic jobs"). A module declares a job as one of its providers;
 * nothing else is registered anywhere.
 */
@Module({
  imports: [DiscoveryModule, TypeOrmModule.forFeature([ScheduledJob])],
  providers: [JobScheduler],
})
export class JobsModule {}
