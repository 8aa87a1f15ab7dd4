import { randomInt, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { SqlHandlerStore } from '../src/platform/events/event-handlers.service';
import {
  startFixtureProcess,
  type FixtureProcess,
} from './helpers/fixture-process';
import { testLimit } from './helpers/pace';
import {
  databaseForProcesses,
  databaseReader,
  ENGINE,
  startTestApp,
  storedTime,
  type TestApp,
} from './helpers/test-app';
import { eventually } from './helpers/webhook-receiver';

const TEN_YEARS_MS = 3650 * 86_400_000;
/** Further ahead than any lease, retry or tick any instance writes (STORED_TIME_SLACK_MS). */
const FAR_AHEAD_MS = 3 * 3_600_000;
const CLOCK_AHEAD = join(__dirname, 'helpers', 'clock-ahead.cjs');

interface RunRow {
  tick: bigint;
  instance: bigint | number;
}

// Time that decides for other instances is the database's (docs/decisions.md, "Time that
// decides for others"): an instance whose clock is ten years ahead, as `faketime +3650d` set
// one, beside one whose clock is right, on one database.
describe(`time that decides for others (${ENGINE})`, () => {
  let right: FixtureProcess;
  let database: ReturnType<typeof databaseReader>;
  let url: string;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    const shared = await databaseForProcesses({ writable: true });
    ({ reader: database, url, drop } = shared);
    right = await startFixtureProcess('jobs', {
      DATABASE_URL: url,
      LOG_LEVEL: 'warn',
    });
  });

  afterAll(async () => {
    right?.child.kill('SIGTERM');
    await right?.exited;
    await drop?.();
  });

  const runsOf = async (pid: number | undefined, since: number) =>
    (
      await database.query<RunRow>(
        'SELECT tick, instance FROM fixture_job_runs WHERE job = ? ORDER BY tick',
        ['fixture.ticking'],
      )
    )
      .map((row) => ({ tick: Number(row.tick), pid: Number(row.instance) }))
      .filter((run) => run.pid === pid && run.tick >= since);

  const createKeyed = (base: string, token: string, key: string, id: number) =>
    fetch(`${base}/plants`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
        'Idempotency-Key': key,
      },
      body: JSON.stringify({ id, name: 'Fern' }),
    });

  it('an instance whose clock is ten years ahead says so, and expires, deletes and holds back nothing', async () => {
    const key = randomUUID();
    const id = randomInt(1, 2 ** 47);
    const { token } = right;
    const first = await createKeyed(right.baseUrl, token, key, id);
    expect(first.status).toBe(200);
    // alone on the database, so that every tick is its to take
    right.child.kill('SIGTERM');
    await right.exited;
    const ahead = await startFixtureProcess(
      'jobs',
      {
        DATABASE_URL: url,
        LOG_LEVEL: 'warn',
        CLOCK_AHEAD_MS: String(TEN_YEARS_MS),
      },
      ['--require', CLOCK_AHEAD],
    );
    try {
      // it took ticks of the one-second job, each at the database's time
      const runs = await eventually(
        () => runsOf(ahead.child.pid, 0),
        (rows) => rows.length >= 2,
        testLimit(20_000),
      );
      for (const { tick } of runs) {
        expect(Math.abs(tick - Date.now())).toBeLessThan(60_000);
      }
      // the log is written every 250 ms (LOG_FLUSH_INTERVAL_MS): two ticks may come first
      const clockLines = await eventually(
        () => ahead.lines().filter((line) => line.context === 'DatabaseClock'),
        (lines) => lines.length > 0,
        testLimit(5_000),
      );
      expect(clockLines[0]).toMatchObject({
        level: 40,
        instance: `${hostname()}:${ahead.child.pid}`,
      });
      expect(clockLines[0].clockOffsetMs).toBeGreaterThan(
        TEN_YEARS_MS - 60_000,
      );
      expect(String(clockLines[0].msg)).toContain('ahead of the database');
      // its sweep, which ran at its start, expired no key, and neither does its own claim
      const again = await createKeyed(ahead.baseUrl, token, key, id);
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      // it stored no time beyond a lease from now
      const jobs = await database.query<{
        name: string;
        done_tick: unknown;
        leased_until: unknown;
      }>('SELECT name, done_tick, leased_until FROM scheduled_jobs', []);
      expect(jobs.length).toBeGreaterThanOrEqual(4);
      const storedAhead = jobs.filter((row) =>
        [row.done_tick, row.leased_until].some(
          (stored) =>
            stored !== null && !(storedTime(stored) < Date.now() + 120_000),
        ),
      );
      expect(storedAhead).toEqual([]);
    } finally {
      ahead.child.kill('SIGTERM');
      await ahead.exited;
    }
    // once it is gone, an instance whose clock is right takes every tick
    right = await startFixtureProcess('jobs', {
      DATABASE_URL: url,
      LOG_LEVEL: 'warn',
    });
    const startedAt = Date.now();
    await eventually(
      () => runsOf(right.child.pid, startedAt),
      (rows) => rows.length >= 2,
      testLimit(20_000),
    );
  });

  it('a done tick and a lease stored years ahead hold no tick back', async () => {
    if (right.child.exitCode !== null || right.child.signalCode !== null) {
      right = await startFixtureProcess('jobs', {
        DATABASE_URL: url,
        LOG_LEVEL: 'warn',
      });
    }
    await database.query(
      "UPDATE scheduled_jobs SET done_tick = ?, leased_until = ?, leased_by = 'an instance long gone' WHERE name = ?",
      [farAhead(), farAhead(), 'fixture.ticking'],
    );
    const since = Date.now() + 1000;
    await eventually(
      () => runsOf(right.child.pid, since),
      (rows) => rows.length >= 2,
      testLimit(20_000),
    );
  });
});

describe(`an event handler's times stored years ahead (${ENGINE})`, () => {
  let testApp: TestApp;

  beforeAll(async () => {
    testApp = await startTestApp();
  });

  afterAll(() => testApp.close());

  it('hold the handler back no longer than a lease and a retry could', async () => {
    const store = new SqlHandlerStore(testApp.app.get(DataSource));
    const name = 'fixture.far-ahead';
    const now = new Date();
    await store.declare(name, ['plant.deleted'], now);
    // what an instance whose clock ran ahead left behind: a retry time and a lease, years on
    expect(await store.claim(name, 'ahead', now, 30_000)).toBe(true);
    const years = new Date(Date.now() + TEN_YEARS_MS);
    await store.failed(name, 'ahead', 1, years, 'failed on a clock ahead');
    await store.renew(name, 'ahead', years);
    expect(await store.claim(name, 'right', new Date(), 30_000)).toBe(true);
    // a lease and a retry within their bounds still hold
    await store.failed(name, 'right', 1, new Date(Date.now() + 60_000), 'x');
    expect(await store.claim(name, 'other', new Date(), 30_000)).toBe(false);
  });
});

/** FAR_AHEAD_MS from now, as each engine stores a time. */
function farAhead(): string {
  const text = new Date(Date.now() + FAR_AHEAD_MS).toISOString();
  return ENGINE === 'postgres' ? text : text.replace('T', ' ').replace('Z', '');
}
