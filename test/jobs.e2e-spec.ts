import {
  startFixtureProcesses,
  type FixtureProcess,
} from './helpers/fixture-process';
import { testLimit } from './helpers/pace';
import {
  databaseForProcesses,
  databaseReader,
  ENGINE,
  storedTime,
} from './helpers/test-app';
import { eventually } from './helpers/webhook-receiver';

interface RunRow {
  job: string;
  tick: bigint;
  instance: bigint | number;
  started_at: bigint;
}

// Periodic jobs run once per tick across instances (docs/decisions.md, "Periodic jobs"):
// three processes of the service on one database, each with the fixture's jobs.
describe(`periodic jobs across three instances (${ENGINE})`, () => {
  let instances: FixtureProcess[] = [];
  let stop: () => Promise<void>;
  let database: ReturnType<typeof databaseReader>;
  let drop: () => Promise<void>;

  const runsOf = async (job: string) =>
    (
      await database.query<RunRow>(
        'SELECT job, tick, instance, started_at FROM fixture_job_runs WHERE job = ? ORDER BY tick, started_at',
        [job],
      )
    ).map((row) => ({
      tick: Number(row.tick),
      instance: Number(row.instance),
      startedAt: Number(row.started_at),
    }));

  beforeAll(async () => {
    const shared = await databaseForProcesses();
    database = shared.reader;
    drop = shared.drop;
    ({ instances, stop } = await startFixtureProcesses('jobs', 3, {
      DATABASE_URL: shared.url,
      LOG_LEVEL: 'warn',
    }));
  });

  afterAll(async () => {
    await stop?.();
    await drop?.();
  });

  it('runs each tick once, whichever instance takes it', async () => {
    const startedAt = Date.now();
    const runs = await eventually(
      () => runsOf('fixture.ticking'),
      (rows) => rows.filter((row) => row.tick >= startedAt).length >= 5,
      testLimit(20_000),
    );
    const ticks = runs.map((row) => row.tick);
    expect(new Set(ticks).size).toBe(ticks.length);
    // each a whole second, as every instance counts them
    for (const tick of ticks) expect(tick % 1000).toBe(0);
    const pids = instances.map((instance) => instance.child.pid);
    for (const { instance } of runs) expect(pids).toContain(instance);
    for (const instance of instances) {
      expect(
        instance
          .lines()
          .filter(
            (line) => line.context === 'JobScheduler' && line.level >= 40,
          ),
      ).toEqual([]);
    }
  });

  it('runs a tick again on another instance once the one running it dies and its lease runs out', async () => {
    const [first] = await eventually(
      () => runsOf('fixture.holding'),
      (rows) => rows.length === 1,
      testLimit(20_000),
    );
    const holder = instances.find(
      (instance) => instance.child.pid === first.instance,
    )!;
    // the holder's lease, renewed every third of its 2 s: read before the kill, so that no
    // takeover can have replaced it, and a renewal after the read only moves its end later
    const [{ leased_until: leasedUntil }] = await database.query<{
      leased_until: unknown;
    }>('SELECT leased_until FROM scheduled_jobs WHERE name = ?', [
      'fixture.holding',
    ]);
    const leaseEnd = storedTime(leasedUntil);
    holder.child.kill('SIGKILL');
    const killedAt = Date.now();
    await holder.exited;
    const runs = await eventually(
      () => runsOf('fixture.holding'),
      (rows) => rows.length >= 2,
      testLimit(20_000),
    );
    expect(runs).toHaveLength(2);
    const [, again] = runs;
    expect(again.tick).toBe(first.tick);
    expect(again.instance).not.toBe(first.instance);
    // held at the kill, and taken over only once it ran out, both on the database's clock
    // (started_at is too): a renewal that came late under load shortens the wait after the
    // kill, never this order
    expect(leaseEnd).toBeGreaterThan(killedAt);
    expect(again.startedAt).toBeGreaterThan(leaseEnd);
    expect(again.startedAt - killedAt).toBeLessThanOrEqual(testLimit(4_000));
  });
});
