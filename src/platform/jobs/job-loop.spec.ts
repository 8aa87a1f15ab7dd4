import { Logger } from '@nestjs/common';
import { IdempotencySweeper } from '../idempotency/idempotency-sweeper';
import {
  SWEEP_BATCH,
  SWEEP_BATCHES_PER_RUN,
  SWEEP_INTERVAL_MS,
} from '../idempotency/idempotency-sweeper';
import type { IdempotencyStore } from '../idempotency/idempotency.store';
import { DatabaseUnreachableError } from '../database/database-errors';
import { Metrics } from '../metrics/metrics';
import type { JobRun, PeriodicJob } from './job.decorator';
import type { RunOutcome } from './job-leases';
import {
  BACKLOG_PAUSE_MS,
  FAILURE_PAUSE_MS,
  JobLoop,
  type Leases,
} from './job-loop';
import { ticksOf } from './job-schedule';

/**
 * The `scheduled_jobs` row of one job, held in memory with the same conditional writes as
 * JobLeases makes in SQL, shared by the instances of a simulation.
 */
class MemoryRow {
  doneTick: Date | null = null;
  leasedBy: string | null = null;
  leasedUntil: Date | null = null;
  readonly ended: { instance: string; tick: number; outcome: RunOutcome }[] =
    [];

  leasesOf(instance: string, { dead = (): boolean => false } = {}): Leases {
    const alive = () => {
      if (dead()) return Promise.reject(new Error('connection lost'));
      return Promise.resolve();
    };
    return {
      claim: async (_name, tick, now, leaseMs) => {
        await alive();
        const free =
          (this.doneTick === null || this.doneTick < tick) &&
          (this.leasedUntil === null || this.leasedUntil < now);
        if (free) {
          this.leasedBy = instance;
          this.leasedUntil = new Date(now.getTime() + leaseMs);
        }
        return free;
      },
      renew: async (_name, now, leaseMs) => {
        await alive();
        if (this.leasedBy !== instance) return false;
        this.leasedUntil = new Date(now.getTime() + leaseMs);
        return true;
      },
      end: async (_name, tick, _now, outcome) => {
        await alive();
        if (this.leasedBy !== instance) return false;
        this.leasedBy = null;
        this.leasedUntil = null;
        if (outcome === 'done') this.doneTick = tick;
        this.ended.push({ instance, tick: tick.getTime(), outcome });
        return true;
      },
      state: async () => {
        await alive();
        return { doneTick: this.doneTick, leasedUntil: this.leasedUntil };
      },
    };
  }
}

/** A job that records when each of its runs started, and takes `durationMs`. */
function recordingJob(
  every: string,
  durationMs: number,
  { lease = '3s' } = {},
): PeriodicJob & { runs: { tick: number; startedAt: number }[] } {
  const runs: { tick: number; startedAt: number }[] = [];
  return {
    schedule: { every, lease },
    runs,
    async run({ tick }: JobRun) {
      runs.push({ tick: tick.getTime(), startedAt: Date.now() });
      await new Promise((resolve) => setTimeout(resolve, durationMs));
    },
  };
}

function loopOf(
  job: PeriodicJob,
  leases: Leases,
  name = 'test.job',
  fenced = () => false,
): JobLoop {
  return new JobLoop(
    name,
    'TestJob',
    job,
    ticksOf(name, job.schedule),
    leases,
    new Logger('JobScheduler'),
    new Metrics(false),
    Date.now,
    fenced,
  );
}

/** Stops the loops, letting fake time pass for their runs to end. */
async function stopAll(...loops: JobLoop[]): Promise<void> {
  const stopped = Promise.all(loops.map((loop) => loop.stop()));
  await jest.advanceTimersByTimeAsync(1000);
  await stopped;
}

describe('JobLoop (a simulation of instances sharing one row, on fake time)', () => {
  let errors: jest.SpyInstance;
  let warnings: jest.SpyInstance;

  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2026-11-29T12:00:00.250Z') });
    errors = jest
      .spyOn(Logger.prototype, 'error')
      .mockImplementation(() => undefined);
    warnings = jest
      .spyOn(Logger.prototype, 'warn')
      .mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'log').mockImplementation(() => undefined);
    jest.spyOn(Logger.prototype, 'debug').mockImplementation(() => undefined);
  });

  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it('runs each tick exactly once across three instances, as the tick comes', async () => {
    const row = new MemoryRow();
    const job = recordingJob('1s', 300);
    const loops = ['a', 'b', 'c'].map((instance) =>
      loopOf(job, row.leasesOf(instance)),
    );
    loops.forEach((loop) => loop.start());
    await jest.advanceTimersByTimeAsync(60_000);
    await stopAll(...loops);

    const first = Date.parse('2026-11-29T12:00:00Z');
    const ticks = job.runs.map(({ tick }) => tick);
    // the tick that had begun at boot, and each one after it, once
    expect(ticks).toEqual(
      Array.from({ length: 61 }, (_, index) => first + index * 1000),
    );
    // a run starts as its tick comes (at boot, at once)
    for (const { tick, startedAt } of job.runs.slice(1)) {
      expect(startedAt - tick).toBeLessThanOrEqual(5);
    }
    expect(new Set(row.ended.map(({ instance }) => instance)).size).toBe(3);
    expect(errors).not.toHaveBeenCalled();
    expect(warnings).not.toHaveBeenCalled();
  });

  it('takes no tick while the store moves (fenced), and takes them again once it may', async () => {
    const row = new MemoryRow();
    const job = recordingJob('1s', 100);
    let fenced = true;
    const loop = loopOf(job, row.leasesOf('a'), 'test.job', () => fenced);
    loop.start();
    await jest.advanceTimersByTimeAsync(10_000);
    expect(job.runs).toEqual([]);
    fenced = false;
    await jest.advanceTimersByTimeAsync(FAILURE_PAUSE_MS + 2000);
    await stopAll(loop);
    expect(job.runs.length).toBeGreaterThan(0);
  });

  it('runs a tick again when the instance running it dies, once its lease has run out', async () => {
    const row = new MemoryRow();
    let aDead = false;
    // instance a hangs in its run (a process that died): it neither renews nor ends
    const hanging: PeriodicJob & { started: number[] } = {
      schedule: { every: '1m', lease: '3s' },
      started: [],
      run() {
        hanging.started.push(Date.now());
        aDead = true;
        return new Promise(() => undefined);
      },
    };
    const a = loopOf(hanging, row.leasesOf('a', { dead: () => aDead }));
    a.start();
    await jest.advanceTimersByTimeAsync(0);
    expect(row.leasedBy).toBe('a');
    const leaseEnd = row.leasedUntil!.getTime();

    const job = recordingJob('1m', 100, { lease: '3s' });
    const bLeases = row.leasesOf('b');
    const bClaims = jest.fn(bLeases.claim);
    const b = loopOf(job, { ...bLeases, claim: bClaims });
    b.start();
    await jest.advanceTimersByTimeAsync(10_000);
    await stopAll(b);

    // b took the same tick over as soon as a's lease had run out, and not before
    expect(job.runs).toHaveLength(1);
    expect(job.runs[0].tick).toBe(Date.parse('2026-11-29T12:00:00Z'));
    expect(job.runs[0].startedAt).toBeGreaterThan(leaseEnd);
    expect(job.runs[0].startedAt - leaseEnd).toBeLessThanOrEqual(5);
    // once at boot, refused, and once the lease had run out: no polling in between
    expect(bClaims).toHaveBeenCalledTimes(2);
    expect(row.ended).toEqual([
      { instance: 'b', tick: job.runs[0].tick, outcome: 'done' },
    ]);
  });

  it('tells a run that outlived its lease to stop, and says so once it ends', async () => {
    const row = new MemoryRow();
    const seen: boolean[] = [];
    const slow: PeriodicJob = {
      schedule: { every: '1m', lease: '3s' },
      async run(run: JobRun) {
        // another instance takes the tick over while this one runs
        row.leasedBy = 'b';
        while (await run.nextBatch()) seen.push(true);
        seen.push(false);
      },
    };
    const loop = loopOf(slow, row.leasesOf('a'));
    loop.start();
    await jest.advanceTimersByTimeAsync(2_000);
    await stopAll(loop);
    // the renewal a third of a lease in found the lease gone, and the run ended there
    expect(seen.at(-1)).toBe(false);
    expect(seen.length).toBeLessThanOrEqual(1000 / 20 + 1);
    expect(warnings).toHaveBeenCalledWith(
      expect.stringContaining('another instance may have run the tick again'),
    );
    expect(row.leasedBy).toBe('b');
  });

  it('works a backlog off run after run, BACKLOG_PAUSE_MS apart, within one tick', async () => {
    // three tokens at their default limits create 18,000 keys a minute: 85,000 is a backlog
    const store = { left: 85_000, sweeps: 0 };
    const sweeper = new IdempotencySweeper(
      {
        sweep: (_now: Date, batch: number) => {
          store.sweeps += 1;
          const deleted = Math.min(batch, store.left);
          store.left -= deleted;
          return Promise.resolve(deleted);
        },
      } as unknown as IdempotencyStore,
      { IDEMPOTENCY_TTL: 24 * 3600_000, IDEMPOTENCY_LEASE: 10_000 },
    );
    const row = new MemoryRow();
    const loops = ['a', 'b'].map((instance) =>
      loopOf(sweeper, row.leasesOf(instance), 'idempotency.sweep'),
    );
    loops.forEach((loop) => loop.start());
    // the first run: its bound of batches, 20 ms apart
    await jest.advanceTimersByTimeAsync(500);
    expect(store.left).toBe(85_000 - SWEEP_BATCH * SWEEP_BATCHES_PER_RUN);
    // the other 75,000 within a few seconds, not eight more minutes
    await jest.advanceTimersByTimeAsync(8 * (BACKLOG_PAUSE_MS + 200) + 500);
    expect(store.left).toBe(0);
    const outcomes = row.ended.map(({ outcome }) => outcome);
    expect(outcomes).toEqual([...Array(8).fill('backlog'), 'done']);
    expect(new Set(row.ended.map(({ tick }) => tick)).size).toBe(1);
    // and then one run a tick again
    const sweeps = store.sweeps;
    await jest.advanceTimersByTimeAsync(SWEEP_INTERVAL_MS);
    expect(store.sweeps).toBe(sweeps + 1);
    await stopAll(...loops);
  });

  it('tries a failed tick again FAILURE_PAUSE_MS later, and logs the failure', async () => {
    const row = new MemoryRow();
    let calls = 0;
    const flaky: PeriodicJob = {
      schedule: { every: '1h' },
      run() {
        calls += 1;
        return calls === 1
          ? Promise.reject(new Error('receiver of the report refused'))
          : Promise.resolve();
      },
    };
    const loop = loopOf(flaky, row.leasesOf('a'));
    loop.start();
    await jest.advanceTimersByTimeAsync(FAILURE_PAUSE_MS - 10);
    expect(calls).toBe(1);
    expect(errors).toHaveBeenCalledWith(
      expect.objectContaining({ message: 'receiver of the report refused' }),
      'job test.job failed',
    );
    await jest.advanceTimersByTimeAsync(20);
    expect(calls).toBe(2);
    expect(row.ended.map(({ outcome }) => outcome)).toEqual(['failed', 'done']);
    await stopAll(loop);
  });

  it('at shutdown, ends the run after its batch and gives the tick back', async () => {
    const row = new MemoryRow();
    let batches = 0;
    const long: PeriodicJob = {
      schedule: { every: '1h' },
      async run(run: JobRun) {
        do batches += 1;
        while (await run.nextBatch());
        return true;
      },
    };
    const loop = loopOf(long, row.leasesOf('a'));
    loop.start();
    await jest.advanceTimersByTimeAsync(200);
    const stopped = loop.stop();
    await jest.advanceTimersByTimeAsync(20);
    await stopped;
    const at = batches;
    await jest.advanceTimersByTimeAsync(10_000);
    expect(batches).toBe(at);
    expect(row.leasedBy).toBeNull();
    expect(row.doneTick).toBeNull();
    expect(row.ended).toEqual([
      expect.objectContaining({ instance: 'a', outcome: 'backlog' }),
    ]);
  });

  it('counts each run by outcome, and logs a debug line of what it ran and how long it took', async () => {
    const row = new MemoryRow();
    const metrics = new Metrics(false);
    const debug = jest.mocked(Logger.prototype.debug);
    let calls = 0;
    const job: PeriodicJob = {
      schedule: { every: '1h' },
      async run() {
        calls += 1;
        await new Promise((resolve) => setTimeout(resolve, 40));
        if (calls === 1) return true;
        if (calls === 2) throw new Error('refused');
      },
    };
    const loop = new JobLoop(
      'test.job',
      'TestJob',
      job,
      ticksOf('test.job', job.schedule),
      row.leasesOf('a'),
      new Logger('JobScheduler'),
      metrics,
    );
    loop.start();
    await jest.advanceTimersByTimeAsync(
      BACKLOG_PAUSE_MS + FAILURE_PAUSE_MS + 500,
    );
    await stopAll(loop);
    const runs = (await metrics.jobRuns.get()).values.map(
      ({ labels, value }) => [labels.job, labels.outcome, value],
    );
    expect(runs.sort()).toEqual([
      ['test.job', 'backlog', 1],
      ['test.job', 'done', 1],
      ['test.job', 'failed', 1],
    ]);
    const durations = (await metrics.jobRunDuration.get()).values.find(
      ({ metricName, labels }) =>
        metricName === 'plant_store_job_run_duration_seconds_count' &&
        labels.job === 'test.job',
    );
    expect(durations?.value).toBe(3);
    const seconds = (await metrics.jobRunDuration.get()).values.find(
      ({ metricName, labels }) =>
        metricName === 'plant_store_job_run_duration_seconds_sum' &&
        labels.job === 'test.job',
    );
    expect(seconds?.value).toBeCloseTo(3 * 0.04, 3);
    expect(debug).toHaveBeenCalledWith(
      'job test.job ran the tick at 2026-11-29T12:00:00.000Z (every 1h) in 40 ms: backlog',
    );
  });

  it('renews the lease of a run longer than a third of it, and keeps its tick', async () => {
    const row = new MemoryRow();
    const leaseEnds: number[] = [];
    const long: PeriodicJob = {
      schedule: { every: '1h', lease: '3s' },
      async run(run: JobRun) {
        for (let second = 0; second < 7; second += 1) {
          await new Promise((resolve) => setTimeout(resolve, 1000));
          leaseEnds.push(row.leasedUntil!.getTime());
          if (run.signal.aborted) return;
        }
      },
    };
    const loop = loopOf(long, row.leasesOf('a'));
    loop.start();
    await jest.advanceTimersByTimeAsync(8000);
    await stopAll(loop);
    // renewed every second: always about a lease ahead of the run
    for (const [second, end] of leaseEnds.entries()) {
      const now = Date.parse('2026-11-29T12:00:00.250Z') + (second + 1) * 1000;
      expect(end - now).toBeGreaterThan(1000);
    }
    expect(row.ended).toEqual([
      expect.objectContaining({ instance: 'a', outcome: 'done' }),
    ]);
    expect(warnings).not.toHaveBeenCalled();
  });

  it('waits quietly while the database is away, and takes the tick once it is back', async () => {
    const row = new MemoryRow();
    let away = true;
    const leases = row.leasesOf('a', { dead: () => away });
    const job = recordingJob('1h', 10);
    const loop = loopOf(job, {
      ...leases,
      claim: (...args) =>
        away
          ? Promise.reject(
              new DatabaseUnreachableError('the database did not answer'),
            )
          : leases.claim(...args),
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(FAILURE_PAUSE_MS - 100);
    expect(job.runs).toEqual([]);
    away = false;
    await jest.advanceTimersByTimeAsync(200);
    expect(job.runs).toHaveLength(1);
    expect(errors).not.toHaveBeenCalled();
    await stopAll(loop);
  });

  it('looks at its row once a tick when it runs each one itself', async () => {
    const row = new MemoryRow();
    const job = recordingJob('1m', 100);
    const leases = row.leasesOf('a');
    const claim = jest.fn(leases.claim);
    const loop = loopOf(job, { ...leases, claim });
    loop.start();
    await jest.advanceTimersByTimeAsync(5 * 60_000);
    await stopAll(loop);
    // the tick at boot and the five after it
    expect(job.runs).toHaveLength(6);
    expect(claim).toHaveBeenCalledTimes(6);
  });

  it('logs a claim that fails for another reason than the database, and tries FAILURE_PAUSE_MS later', async () => {
    const row = new MemoryRow();
    const leases = row.leasesOf('a');
    let refusals = 1;
    const job = recordingJob('1h', 10);
    const loop = loopOf(job, {
      ...leases,
      claim: (...args) =>
        refusals-- > 0
          ? Promise.reject(new Error('permission denied for table'))
          : leases.claim(...args),
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(FAILURE_PAUSE_MS - 10);
    expect(job.runs).toEqual([]);
    expect(errors).toHaveBeenCalledWith(
      expect.objectContaining({ message: 'permission denied for table' }),
      'job test.job could not take its tick',
    );
    await jest.advanceTimersByTimeAsync(20);
    expect(job.runs).toHaveLength(1);
    await stopAll(loop);
  });

  it('stops renewing once its run ends', async () => {
    const row = new MemoryRow();
    const leases = row.leasesOf('a');
    const renew = jest.fn(leases.renew);
    const loop = loopOf(recordingJob('1h', 2500, { lease: '3s' }), {
      ...leases,
      renew,
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(20_000);
    await stopAll(loop);
    // a third of the lease in, and two thirds in; the run ended at 2.5 s
    expect(renew).toHaveBeenCalledTimes(2);
  });

  it('warns when the end of its run could not be written: another instance may run the tick again', async () => {
    const row = new MemoryRow();
    const leases = row.leasesOf('a');
    const loop = loopOf(recordingJob('1h', 10), {
      ...leases,
      end: () => Promise.reject(new Error('connection lost')),
    });
    loop.start();
    await jest.advanceTimersByTimeAsync(1000);
    await stopAll(loop);
    expect(warnings).toHaveBeenCalledTimes(1);
    expect(warnings).toHaveBeenCalledWith(
      expect.stringContaining('another instance may have run the tick again'),
    );
  });

  it('logs no failure of a run that throws because shutdown stopped it', async () => {
    const row = new MemoryRow();
    const job: PeriodicJob = {
      schedule: { every: '1h' },
      async run({ signal }: JobRun) {
        await new Promise((resolve) =>
          signal.addEventListener('abort', resolve),
        );
        throw new Error('aborted');
      },
    };
    const loop = loopOf(job, row.leasesOf('a'));
    loop.start();
    await jest.advanceTimersByTimeAsync(100);
    await stopAll(loop);
    expect(row.ended.map(({ outcome }) => outcome)).toEqual(['failed']);
    expect(errors).not.toHaveBeenCalled();
  });

  it('runs nothing for a cron pattern that never comes, and does not spin', async () => {
    const row = new MemoryRow();
    const job: PeriodicJob & { runs: number } = {
      schedule: { cron: '0 0 31 2 *' },
      runs: 0,
      run() {
        job.runs += 1;
        return Promise.resolve();
      },
    };
    const claim = jest.fn(row.leasesOf('a').claim);
    const loop = loopOf(job, { ...row.leasesOf('a'), claim });
    loop.start();
    await jest.advanceTimersByTimeAsync(3 * 3_600_000);
    await stopAll(loop);
    expect(job.runs).toBe(0);
    expect(claim).not.toHaveBeenCalled();
  });

  it('runs a cron job at its times in UTC', async () => {
    const row = new MemoryRow();
    const job: PeriodicJob & { ticks: string[] } = {
      schedule: { cron: '*/15 * * * *' },
      ticks: [],
      run({ tick }: JobRun) {
        job.ticks.push(tick.toISOString());
        return Promise.resolve();
      },
    };
    const loop = loopOf(job, row.leasesOf('a'));
    loop.start();
    await jest.advanceTimersByTimeAsync(31 * 60_000);
    await stopAll(loop);
    expect(job.ticks).toEqual([
      '2026-11-29T12:00:00.000Z',
      '2026-11-29T12:15:00.000Z',
      '2026-11-29T12:30:00.000Z',
    ]);
  });
});

describe('ticksOf', () => {
  it.each([
    [{ every: '5x' }, 'schedule.every must be a duration'],
    [{ every: 0 }, 'schedule.every must be a duration'],
    [{ cron: '61 * * * *' }, 'is not a cron pattern'],
    [{}, 'either every'],
    [{ every: '1m', cron: '* * * * *' }, 'either every'],
    [{ every: '1m', lease: 'soon' }, 'schedule.lease must be a duration'],
  ])('refuses %j, naming the job', (schedule, problem) => {
    const refusal = (() => {
      try {
        ticksOf('care.overdue', schedule as never);
      } catch (error) {
        return error as Error;
      }
    })();
    expect(refusal?.name).toBe('StartupError');
    expect(refusal?.message).toMatch(
      new RegExp(`^@Job\\('care\\.overdue'\\): .*${problem}`),
    );
  });

  it.each(['Care', 'care overdue', 'care..overdue', 'x'.repeat(65)])(
    'refuses the name %j',
    (name) => {
      expect(() => ticksOf(name, { every: '1m' })).toThrow(
        'the name must be lowercase words',
      );
    },
  );
});
