import { applyDecorators, Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';

/**
 * When a job runs: `every` an interval (`30s`, `5m`, `1h`, or milliseconds), ticks counted
 * from the Unix epoch so that every instance agrees on them, or at the times of a `cron`
 * pattern in UTC (`0 3 * * *`, with an optional seconds field first). One of the two.
 */
export type JobSchedule = (
  | { every: string | number; cron?: never }
  | { cron: string; every?: never }
) & {
  /**
   * How long an instance holds a tick without renewing it before another may take it over
   * (the holder renews it every third of it while it runs): `30s` unless said.
   */
  lease?: string | number;
};

/** What a run is handed. */
export interface JobRun {
  /** The scheduled time of the tick it runs for. */
  readonly tick: Date;
  /** Aborted when the service shuts down or another instance took the tick over. */
  readonly signal: AbortSignal;
  /**
   * The time every instance agrees on, the database's (docs/decisions.md, "Time that decides
   * for others"): what a run compares stored times with, never its own machine's clock.
   */
  now(): Date;
  /**
   * Between two batches of work: a short pause, so that requests get the database (SQLite's
   * one connection); false once the run must end, after the batch it was in.
   */
  nextBatch(): Promise<boolean>;
}

/**
 * A periodic job: a provider marked `@Job('<module>.<what>')`. Its `run` resolves `true` when
 * it stopped at its bound and left work behind: the same tick runs again soon after, on
 * whichever instance takes it.
 */
export interface PeriodicJob {
  readonly schedule: JobSchedule;
  run(run: JobRun): Promise<boolean | void>;
}

/**
 * Marks a provider as a periodic job that runs once per tick across every instance of the
 * service (docs/conventions.md, "Periodic jobs"; docs/decisions.md, "Periodic jobs").
 * The name is the job's row in the database and its label in logs and metrics: lowercase
 * words joined by dots or dashes, at most 64 characters.
 */
export function Job(name: string): ClassDecorator {
  return applyDecorators(Injectable(), JobName(name));
}

/** The metadata `Job` sets, which JobScheduler finds the jobs by. */
export const JobName = DiscoveryService.createDecorator<string>();
