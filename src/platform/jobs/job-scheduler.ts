import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  BeforeApplicationShutdown,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { InjectRepository } from '@nestjs/typeorm';
import type { Repository } from 'typeorm';
import { StartupError } from '../common/errors/startup-error';
import { DatabaseClockService } from '../database/database-clock.service';
import { StoreFenceService } from '../database/store-fence.service';
import { Metrics } from '../metrics/metrics';
import { JobName, type PeriodicJob } from './job.decorator';
import { JobLeases } from './job-leases';
import { JobLoop } from './job-loop';
import { ticksOf } from './job-schedule';
import { ScheduledJob } from './scheduled-job.entity';

/**
 * Runs every `@Job()` of the app once per tick across all instances (docs/decisions.md,
 * "Periodic jobs"). Each instance wakes at each tick and tries to take it with a conditional
 * write on the job's row; the one that does runs it, renewing its lease every third of it,
 * and marks the tick done. An instance that dies mid-run leaves its lease to run out, and
 * another runs the tick again: a run must be safe to repeat after a crash. At shutdown the
 * running runs end after their current batch and give their ticks back.
 */
@Injectable()
export class JobScheduler
  implements OnApplicationBootstrap, BeforeApplicationShutdown
{
  private readonly logger = new Logger(JobScheduler.name);
  private readonly leases: JobLeases;
  private readonly loops: JobLoop[] = [];

  constructor(
    private readonly discovery: DiscoveryService,
    @InjectRepository(ScheduledJob) jobs: Repository<ScheduledJob>,
    private readonly metrics: Metrics,
    private readonly clock: DatabaseClockService,
    private readonly fence: StoreFenceService,
  ) {
    this.leases = new JobLeases(
      jobs,
      `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    );
  }

  async onApplicationBootstrap(): Promise<void> {
    const declared = new Map<string, JobLoop>();
    for (const wrapper of this.discovery.getProviders({
      metadataKey: JobName.KEY,
    })) {
      const name = this.discovery.getMetadataByDecorator(JobName, wrapper)!;
      const job = wrapper.instance as PeriodicJob;
      if (declared.has(name)) {
        throw new StartupError(
          `@Job('${name}') is declared twice (${declared.get(name)!.declaredBy} and ${wrapper.name}): give each job a name of its own`,
        );
      }
      if (typeof job?.run !== 'function' || job.schedule === undefined) {
        throw new StartupError(
          `@Job('${name}') on ${wrapper.name}: a job has a \`schedule\` and a \`run(run: JobRun)\` method (docs/conventions.md, "Periodic jobs")`,
        );
      }
      declared.set(
        name,
        new JobLoop(
          name,
          String(wrapper.name),
          job,
          ticksOf(name, job.schedule),
          this.leases,
          this.logger,
          this.metrics,
          () => this.clock.now(),
          () => !this.fence.writable,
        ),
      );
    }
    for (const loop of declared.values()) {
      await this.leases.declare(loop.name);
      this.loops.push(loop);
      loop.start();
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all(this.loops.map((loop) => loop.stop()));
  }
}
