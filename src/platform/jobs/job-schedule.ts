import { Cron } from 'croner';
import { StartupError } from '../common/errors/startup-error';
import {
  isDeclaredName,
  MAX_DECLARED_NAME,
} from '../common/modules/declared-name';
import { DURATION_FORMAT, parseDuration } from '../config/setting-kinds';
import type { JobSchedule } from './job.decorator';

/** How long a tick is held without a renewal, unless a job says. */
export const DEFAULT_LEASE_MS = 30_000;

/** A job's schedule as times: its ticks, and the lease of one. */
export interface Ticks {
  /** The latest tick at or before `now`; undefined before the first. */
  latest(now: number): number | undefined;
  /** The first tick after `tick`; undefined when there is none. */
  after(tick: number): number | undefined;
  leaseMs: number;
  /** As a log line says it: `every 5m`, `cron 0 3 * * *`. */
  text: string;
}

/** Reads a job's declaration; a mistake in it stops the boot with a line naming the job. */
export function ticksOf(name: string, schedule: JobSchedule): Ticks {
  const refuse = (problem: string) =>
    new StartupError(
      `@Job('${name}'): ${problem} (docs/conventions.md, "Periodic jobs")`,
    );
  if (!isDeclaredName(name)) {
    throw refuse(
      `the name must be lowercase words joined by dots or dashes, at most ${MAX_DECLARED_NAME} characters, as 'care.overdue'`,
    );
  }
  const durationOf = (field: string, value: string | number) => {
    const ms = typeof value === 'number' ? value : parseDuration(value);
    if (ms === undefined || !Number.isSafeInteger(ms) || ms <= 0) {
      throw refuse(
        `schedule.${field} must be a duration written ${DURATION_FORMAT.source} (500ms, 30s, 5m, 1h, 2d) or a positive number of milliseconds, got ${JSON.stringify(value)}`,
      );
    }
    return ms;
  };
  const leaseMs =
    schedule.lease === undefined
      ? DEFAULT_LEASE_MS
      : durationOf('lease', schedule.lease);
  if ((schedule.every === undefined) === (schedule.cron === undefined)) {
    throw refuse(
      "the schedule must say either every (an interval: '5m') or cron (a pattern: '0 3 * * *'), one of the two",
    );
  }
  if (schedule.every !== undefined) {
    const everyMs = durationOf('every', schedule.every);
    return {
      latest: (now) => Math.floor(now / everyMs) * everyMs,
      after: (tick) => tick + everyMs,
      leaseMs,
      text: `every ${String(schedule.every)}`,
    };
  }
  let cron: Cron;
  try {
    cron = new Cron(schedule.cron, { paused: true, timezone: 'UTC' });
  } catch (error) {
    throw refuse(
      `schedule.cron ${JSON.stringify(schedule.cron)} is not a cron pattern: ${(error as Error).message}`,
    );
  }
  return {
    // croner's previous runs are strictly before the time it is given
    latest: (now) => cron.previousRuns(1, new Date(now + 1))[0]?.getTime(),
    after: (tick) => cron.nextRun(new Date(tick))?.getTime(),
    leaseMs,
    text: `cron ${schedule.cron}`,
  };
}
