import { Logger } from '@nestjs/common';
import {
  integersBetween,
  seededRandom,
} from '../../../test/helpers/seeded-random';
import { DatabaseUnreachableError } from '../database/database-errors';
import { Metrics } from '../metrics/metrics';
import type { HandledEvent } from './event-handler.decorator';
import {
  HANDLER_BATCH,
  HANDLER_LEASE_MS,
  HANDLER_MAX_ATTEMPTS,
  HANDLER_POLL_MS,
  HANDLER_RETRY_BASE_MS,
  DEFAULT_HANDLER_RETRY,
  HandlerLoop,
  HANDLER_MAX_RETRY_MS,
  retryDelayMs,
  retryPending,
  skippedWithinMs,
} from './handler-loop';
import {
  type HandlerRow,
  type HandlerStore,
  type LoggedEvent,
} from './handler-store';

const NAME = 'care.plant-deleted';
const HANDLED = 'plant.deleted';
const START = Date.parse('2026-11-29T12:00:00Z');
/** The longest a statement of the simulated database takes; each takes 0 to this, seeded. */
const STATEMENT_MS = 10;
/**
 * What a step of the simulation may take beyond a bound: the fake clock moves in whole ms, and
 * a turn's statements before its handler runs (head, row, claim, events) take their time.
 */
const SLACK_MS = 5 + 4 * STATEMENT_MS;
/** After the database comes back: the pause of a turn that found it away, then a poll. */
const RECOVERY_MS = HANDLER_RETRY_BASE_MS + HANDLER_POLL_MS;

interface Attempt {
  instance: string;
  seq: bigint;
  at: number;
  /** The handler's cursor as the attempt began. */
  cursor: bigint;
  outcome?: 'threw' | 'committed' | 'lost' | 'rolled back';
  endedAt?: number;
}

/**
 * The `event_handlers` row of one handler and the event log, in memory, with the conditional
 * writes of the SQL store (event-handlers.service.ts), shared by the instances of a simulation. A
 * handler's writes are kept per instance until its transaction commits.
 */
class MemoryDatabase {
  readonly events: (LoggedEvent & { appendedAt: number })[] = [];
  row:
    | (HandlerRow & { leasedBy: string | null; leasedUntil: Date | null })
    | null = null;
  /** The handler's writes that committed: one per event, in the order they committed. */
  readonly effects: { seq: bigint; instance: string; at: number }[] = [];
  readonly attempts: Attempt[] = [];
  /** Each failure recorded: the count it wrote, the one before it, and when to retry. */
  readonly failures: {
    at: number;
    failures: number;
    before: number;
    retryAt: number;
    error: string;
  }[] = [];
  /** Spans in which every call finds the database away. */
  readonly away: { from: number; to: number }[] = [];
  /** The events given up on, in the order they were; `retry` as an operator asks. */
  readonly skipped: {
    event: LoggedEvent;
    attempts: number;
    at: number;
    instance: string;
    retry: boolean;
    error: string;
  }[] = [];
  /** Skipped events handled on a retry, as they committed. */
  readonly retried: { seq: bigint; instance: string; at: number }[] = [];

  append(type: string): bigint {
    const seq = BigInt(this.events.length + 1);
    this.events.push({
      id: `evt_${seq}`,
      type,
      seq,
      createdAt: new Date(),
      payload: `{"id":${seq}}`,
      appendedAt: Date.now(),
    });
    return seq;
  }

  isAway(at = Date.now()): boolean {
    return this.away.some(({ from, to }) => at >= from && at < to);
  }

  /**
   * The store as `instance` sees it: each statement takes effect when it reaches the database,
   * `latency()` after it was sent, as other instances' statements land in between; one that
   * has died waits forever on each call.
   */
  storeOf(
    instance: string,
    dead: () => boolean,
    latency: () => number = () => 0,
  ): HandlerStore {
    const call = async <T>(work: () => T): Promise<T> => {
      if (dead()) return new Promise<T>(() => undefined);
      const ms = latency();
      await (ms > 0
        ? new Promise((resolve) => setTimeout(resolve, ms))
        : Promise.resolve());
      if (this.isAway()) throw new DatabaseUnreachableError('database away');
      return work();
    };
    const holds = () => this.row?.leasedBy === instance;
    return {
      declare: () =>
        call(() => {
          this.row ??= {
            cursor: BigInt(this.events.length),
            failures: 0,
            retryAt: null,
            retries: false,
            leasedBy: null,
            leasedUntil: null,
          };
        }),
      head: () => call(() => BigInt(this.events.length)),
      row: () =>
        call(() =>
          this.row === null
            ? null
            : {
                ...this.row,
                retries: this.skipped.some(({ retry }) => retry),
              },
        ),
      claim: (_name, _instance, now, leaseMs) =>
        call(() => {
          const row = this.row!;
          const free =
            (row.leasedUntil === null ||
              row.leasedUntil < now ||
              row.leasedBy === instance) &&
            (row.retryAt === null || row.retryAt < now);
          if (free) {
            row.leasedBy = instance;
            row.leasedUntil = new Date(now.getTime() + leaseMs);
          }
          return free;
        }),
      renew: (_name, _instance, until) =>
        call(() => {
          if (holds()) this.row!.leasedUntil = until;
        }),
      release: () =>
        call(() => {
          if (holds()) {
            this.row!.leasedBy = null;
            this.row!.leasedUntil = null;
          }
        }),
      eventsAfter: (cursor, types, limit) =>
        call(() =>
          this.events
            .filter(({ seq, type }) => seq > cursor && types.includes(type))
            .slice(0, limit)
            .map(({ appendedAt: _appendedAt, ...event }) => event),
        ),
      handleOne: async (_name, _instance, seq, handle) => {
        const cursor = await call(() => this.row!.cursor);
        const attempt: Attempt = { instance, seq, at: Date.now(), cursor };
        this.attempts.push(attempt);
        try {
          await handle();
        } catch (error) {
          attempt.outcome = 'threw';
          attempt.endedAt = Date.now();
          throw error;
        }
        return call(() => {
          attempt.endedAt = Date.now();
          if (!holds() || this.row!.cursor >= seq) {
            attempt.outcome = 'lost';
            return false;
          }
          attempt.outcome = 'committed';
          const row = this.row!;
          row.cursor = seq;
          row.failures = 0;
          row.retryAt = null;
          this.effects.push({ seq, instance, at: Date.now() });
          return true;
        }).catch((error: unknown) => {
          attempt.outcome ??= 'rolled back';
          attempt.endedAt ??= Date.now();
          throw error;
        });
      },
      failed: (_name, _instance, failures, retryAt, error) => {
        // the failure as the instance met it, before its statement took its time
        const at = Date.now();
        return call(() => {
          if (!holds()) return;
          const row = this.row!;
          this.failures.push({
            at,
            failures,
            before: row.failures,
            retryAt: retryAt.getTime(),
            error,
          });
          row.failures = failures;
          row.retryAt = retryAt;
        });
      },
      passTo: (_name, _instance, head) =>
        call(() => {
          if (holds() && this.row!.cursor < head) this.row!.cursor = head;
        }),
      skip: (_name, _instance, event, attempts, error) =>
        call(() => {
          if (!holds() || this.row!.cursor >= event.seq) return false;
          const row = this.row!;
          row.cursor = event.seq;
          row.failures = 0;
          row.retryAt = null;
          this.skipped.push({
            event,
            attempts,
            at: Date.now(),
            instance,
            retry: false,
            error,
          });
          return true;
        }),
      retriesOf: (_name, limit) =>
        call(() =>
          this.skipped
            .filter(({ retry }) => retry)
            .slice(0, limit)
            .map(({ event, attempts }) => ({ ...event, attempts })),
        ),
      handleSkipped: async (_name, _instance, seq, handle) => {
        await handle();
        return call(() => {
          const index = this.skipped.findIndex(
            (skipped) => skipped.event.seq === seq && skipped.retry,
          );
          if (!holds() || index < 0) return false;
          this.skipped.splice(index, 1);
          this.retried.push({ seq, instance, at: Date.now() });
          return true;
        });
      },
      retryFailed: (_name, seq, error) =>
        call(() => {
          const skipped = this.skipped.find(({ event }) => event.seq === seq);
          if (skipped) {
            skipped.attempts += 1;
            skipped.retry = false;
            skipped.error = error;
          }
        }),
    };
  }
}

/** A handler that fails an event as often as the plan says, and takes the time it says. */
function plannedHandler(plan: {
  failuresOf: Map<bigint, number>;
  durationOf: (seq: bigint, attempt: number) => number;
}) {
  const attemptsOf = new Map<bigint, number>();
  return {
    async handle({ seq }: HandledEvent): Promise<void> {
      const attempt = (attemptsOf.get(seq) ?? 0) + 1;
      attemptsOf.set(seq, attempt);
      await new Promise((resolve) =>
        setTimeout(resolve, plan.durationOf(seq, attempt)),
      );
      if (attempt <= (plan.failuresOf.get(seq) ?? 0)) {
        throw new Error(`planned failure ${attempt} of event ${seq}`);
      }
    },
  };
}

interface Instance {
  name: string;
  loop: HandlerLoop;
  dead: boolean;
  startedAt: number;
  diedAt?: number;
}

/**
 * One seeded run: three instances handle a log that grows for a minute, while events fail,
 * handlers outlive their lease, instances die and are replaced, and the database goes away;
 * then a calm in which everything left is handled. The invariants: each event of its types
 * handled once, in order, the others never; retries as docs/decisions.md promises them
 * (1 s doubling, within a poll); a dead instance's events taken over once its lease runs out;
 * an event handled within a poll of its commit while the handler keeps up.
 */
async function simulate(seed: number): Promise<{
  violations: string[];
  happened: Record<
    'deaths' | 'outages' | 'failures' | 'takeovers' | 'skips',
    number
  >;
}> {
  const random = seededRandom(seed);
  const between = integersBetween(random);
  const db = new MemoryDatabase();
  const failuresOf = new Map<bigint, number>();
  const longFirstAttempt = new Set<bigint>();
  const durationOf = (seq: bigint, attempt: number) =>
    attempt === 1 && longFirstAttempt.has(seq)
      ? HANDLER_LEASE_MS + between(1000, 10_000)
      : between(0, 30);
  const handler = plannedHandler({ failuresOf, durationOf });
  const instances: Instance[] = [];
  const startInstance = async (slot: number) => {
    const instance: Instance = {
      name: `instance-${slot}-${instances.length}`,
      dead: false,
      startedAt: Date.now(),
      loop: undefined!,
    };
    instance.loop = new HandlerLoop(
      NAME,
      [HANDLED],
      handler,
      db.storeOf(
        instance.name,
        () => instance.dead,
        () => between(0, STATEMENT_MS),
      ),
      instance.name,
      new Logger('EventHandlers'),
      new Metrics(false),
    );
    instances.push(instance);
    // a process that boots while the database is away fails, and is started again
    while (
      !(await instance.loop.declare().then(
        () => true,
        () => false,
      ))
    ) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    instance.loop.start();
    return instance;
  };
  // their first statements take their time too
  const starting = Promise.all([0, 1, 2].map(startInstance));
  await jest.advanceTimersByTimeAsync(STATEMENT_MS);
  const slots = await starting;

  // a minute of events, faults among them
  const busyUntil = START + 60_000;
  const outages: { from: number; to: number }[] = [];
  const deaths: { from: number; to: number }[] = [];
  while (Date.now() < busyUntil) {
    await jest.advanceTimersByTimeAsync(between(1, 400));
    const seq = db.append(random() < 0.7 ? HANDLED : 'plant.added');
    const roll = random();
    if (roll < 0.08) failuresOf.set(seq, between(1, 4));
    else if (roll < 0.1) longFirstAttempt.add(seq);
    // an event no attempt ever handles: skipped after its attempts, the later ones go on
    else if (roll < 0.11) failuresOf.set(seq, Infinity);
    const fault = random();
    if (fault < 0.01) {
      // an instance dies, and another takes its place a little later
      const slot = between(0, 2);
      const dying = slots[slot];
      if (!dying.dead) {
        dying.dead = true;
        dying.diedAt = Date.now();
        deaths.push({ from: Date.now(), to: Date.now() + HANDLER_LEASE_MS });
        const restartIn = between(100, 5000);
        setTimeout(() => {
          void startInstance(slot).then((started) => {
            slots[slot] = started;
          });
        }, restartIn);
      }
    } else if (fault < 0.02) {
      const from = Date.now() + between(0, 200);
      const to = from + between(100, 3000);
      db.away.push({ from, to });
      outages.push({ from, to: to + RECOVERY_MS });
    }
  }
  // the calm: until everything is handled, which a long handler or a dead instance may
  // hold up by a lease each; the invariants say whether each hold-up kept to its bound
  const calmUntil = Date.now() + 15 * 60_000;
  const everything = BigInt(db.events.length);
  while (Date.now() < calmUntil && db.row!.cursor < everything) {
    await jest.advanceTimersByTimeAsync(10_000);
  }
  const stopping = Promise.all(
    instances.filter(({ dead }) => !dead).map(({ loop }) => loop.stop()),
  );
  await jest.advanceTimersByTimeAsync(HANDLER_LEASE_MS + 15_000);
  await stopping;

  const violations: string[] = [];
  if (process.env.HANDLER_DEBUG) {
    console.log(
      seed,
      db.row,
      instances.map(({ name, dead }) => [name, dead]),
      db.attempts.slice(-5),
      Date.now() - START,
    );
  }
  const overlaps =
    (spans: { from: number; to: number }[]) => (from: number, to: number) =>
      spans.some((span) => span.from <= to && span.to >= from);
  const inOutage = overlaps(outages);
  const inFault = overlaps([...outages, ...deaths]);

  // each event of its types once, in the log's order, but those that always fail; no other
  const poisoned = (seq: bigint) => failuresOf.get(seq) === Infinity;
  const wanted = db.events
    .filter(({ type, seq }) => type === HANDLED && !poisoned(seq))
    .map(({ seq }) => seq);
  const handledSeqs = db.effects.map(({ seq }) => seq);
  if (handledSeqs.join() !== wanted.join()) {
    const twice = handledSeqs.filter(
      (seq, index) => handledSeqs.indexOf(seq) !== index,
    );
    const missing = wanted.filter((seq) => !handledSeqs.includes(seq));
    const others = handledSeqs.filter((seq) => !wanted.includes(seq));
    violations.push(
      `handled ${handledSeqs.length} of ${wanted.length} events: twice ${twice.join(',') || 'none'}, never ${missing.join(',') || 'none'}, not its own ${others.join(',') || 'none'}${twice.length + missing.length + others.length === 0 ? ', out of order' : ''}`,
    );
  }

  // no attempt at an event the cursor had passed: it was handled (a turn that read the row
  // before another instance's last commit must read it again once it holds the lease)
  for (const attempt of db.attempts.filter(
    ({ seq, cursor }) => seq <= cursor,
  )) {
    violations.push(
      `event ${attempt.seq} tried at ${attempt.at - START} ms by ${attempt.instance}, with the cursor already at ${attempt.cursor}`,
    );
  }

  // each event that always fails skipped once, after exactly its attempts, and within the
  // promised time of its first failure (its pauses, and a poll and a turn for each attempt)
  const skippedSeqs = db.skipped.map(({ event }) => event.seq);
  const mustSkip = db.events
    .filter(({ type, seq }) => type === HANDLED && poisoned(seq))
    .map(({ seq }) => seq);
  if (skippedSeqs.join() !== mustSkip.join()) {
    violations.push(
      `skipped ${skippedSeqs.join(',') || 'none'}, not the events that always fail: ${mustSkip.join(',') || 'none'}`,
    );
  }
  for (const skipped of db.skipped) {
    const where = `event ${skipped.event.seq}, skipped at ${skipped.at - START} ms`;
    if (skipped.attempts !== HANDLER_MAX_ATTEMPTS) {
      violations.push(`${where} after ${skipped.attempts} attempts`);
    }
    const first = db.attempts.find(({ seq }) => seq === skipped.event.seq)!;
    const bound =
      first.at +
      skippedWithinMs(DEFAULT_HANDLER_RETRY) +
      HANDLER_MAX_ATTEMPTS * (HANDLER_POLL_MS + SLACK_MS);
    if (!inFault(first.at, bound) && skipped.at > bound) {
      violations.push(
        `${where}, past ${bound - START} ms (its first attempt at ${first.at - START} ms)`,
      );
    }
  }

  // no attempt at an event before every earlier one has committed or been skipped
  for (const attempt of db.attempts) {
    const earlier =
      db.effects.filter(({ seq, at }) => seq < attempt.seq && at <= attempt.at)
        .length +
      db.skipped.filter(
        ({ event, at }) => event.seq < attempt.seq && at <= attempt.at,
      ).length;
    const due = [...wanted, ...mustSkip].filter(
      (seq) => seq < attempt.seq,
    ).length;
    if (earlier !== due) {
      violations.push(
        `event ${attempt.seq} tried at ${attempt.at - START} ms by ${attempt.instance}, with ${due - earlier} before it not handled`,
      );
    }
  }

  // retries: the count goes up by one, the pause is the promised one, and the next attempt
  // comes no sooner, and within a poll of it when nothing got in the way
  for (const failure of db.failures) {
    const where = `a failure recorded at ${failure.at - START} ms`;
    if (failure.failures !== failure.before + 1) {
      violations.push(
        `${where} counted ${failure.failures} in a row after ${failure.before}`,
      );
    }
    if (failure.retryAt - failure.at !== retryDelayMs(failure.failures)) {
      violations.push(
        `${where} paused ${failure.retryAt - failure.at} ms, not ${retryDelayMs(failure.failures)}`,
      );
    }
    const next = db.attempts.find(({ at }) => at > failure.at);
    if (next && next.at < failure.retryAt) {
      violations.push(
        `${where}: event ${next.seq} tried again at ${next.at - START} ms, before ${failure.retryAt - START} ms`,
      );
    }
    const bound = failure.retryAt + HANDLER_POLL_MS + SLACK_MS;
    if (!inFault(failure.at, bound) && (!next || next.at > bound)) {
      violations.push(
        `${where}: not tried again by ${bound - START} ms (${next ? `at ${next.at - START} ms` : 'never'})`,
      );
    }
  }

  // a handler outliving its lease, or an instance dead with it: the next instance takes the
  // events over once the lease runs out, within a poll
  for (const attempt of db.attempts) {
    if (attempt.outcome === 'committed' || attempt.outcome === 'threw')
      continue;
    const owner = instances.find(({ name }) => name === attempt.instance)!;
    if (attempt.outcome === undefined && !owner.dead) {
      violations.push(
        `event ${attempt.seq}: an attempt by ${owner.name} never ended`,
      );
    }
    const next = db.attempts.find(
      ({ at, seq }) => at > attempt.at && seq === attempt.seq,
    );
    const bound = attempt.at + HANDLER_LEASE_MS + HANDLER_POLL_MS + SLACK_MS;
    if (
      attempt.outcome !== 'rolled back' &&
      !inOutage(attempt.at + 1, bound) &&
      (!next || next.at > bound)
    ) {
      violations.push(
        `event ${attempt.seq}: left by ${owner.name} at ${attempt.at - START} ms, not taken over by ${bound - START} ms`,
      );
    }
  }

  // while it keeps up: handled within a poll of its commit, and its own time
  for (const event of db.events.filter(({ type }) => type === HANDLED)) {
    const tries = db.attempts.filter(({ seq }) => seq === event.seq);
    const effect = db.effects.find(({ seq }) => seq === event.seq);
    if (!effect || tries.length !== 1) continue;
    const waitedFor = [
      ...db.effects,
      ...db.skipped.map(({ event: { seq }, at }) => ({ seq, at })),
    ].filter(({ seq, at }) => seq < event.seq && at > event.appendedAt).length;
    if (waitedFor > 0 || inFault(event.appendedAt, effect.at)) continue;
    const own = tries[0].endedAt! - tries[0].at;
    if (effect.at - event.appendedAt > HANDLER_POLL_MS + own + SLACK_MS) {
      violations.push(
        `event ${event.seq}: handled ${effect.at - event.appendedAt} ms after its commit, past a poll (${HANDLER_POLL_MS} ms) and its own ${own} ms`,
      );
    }
  }
  return {
    violations,
    happened: {
      deaths: deaths.length,
      outages: outages.length,
      failures: db.failures.length,
      takeovers: db.attempts.filter(({ outcome }) => outcome === 'lost').length,
      skips: db.skipped.length,
    },
  };
}

describe('HandlerLoop (a simulation of instances sharing one handler, on fake time)', () => {
  beforeEach(() => {
    jest.useFakeTimers({ now: START });
    for (const level of ['error', 'warn', 'log', 'debug'] as const) {
      jest.spyOn(Logger.prototype, level).mockImplementation(() => undefined);
    }
  });

  afterEach(() => {
    jest.useRealTimers();
    jest.restoreAllMocks();
  });

  it.each(Array.from({ length: 10 }, (_, index) => index * 10 + 1))(
    'keeps every invariant over seeds %i to +9: once, in order, retries and takeovers on time',
    async (first) => {
      const broken: string[] = [];
      const happened = {
        deaths: 0,
        outages: 0,
        failures: 0,
        takeovers: 0,
        skips: 0,
      };
      for (let seed = first; seed < first + 10; seed += 1) {
        jest.setSystemTime(START);
        const run = await simulate(seed);
        if (run.violations.length > 0) {
          broken.push(`seed ${seed}: ${run.violations.slice(0, 3).join('; ')}`);
        }
        for (const key of Object.keys(happened) as (keyof typeof happened)[]) {
          happened[key] += run.happened[key];
        }
      }
      expect(broken).toEqual([]);
      // the runs did what they are for: instances died, the database went away, events
      // failed, and handlers outlived their lease
      expect(happened).toEqual({
        deaths: expect.any(Number),
        outages: expect.any(Number),
        failures: expect.any(Number),
        takeovers: expect.any(Number),
        skips: expect.any(Number),
      });
      for (const count of Object.values(happened)) {
        expect(count).toBeGreaterThan(0);
      }
    },
  );

  it('skips an event after its attempts, about a minute after its first failure, goes on with the next at once, and handles it when an operator asks', async () => {
    const db = new MemoryDatabase();
    const metrics = new Metrics(false);
    const errors = jest.mocked(Logger.prototype.error);
    const logs = jest.mocked(Logger.prototype.log);
    let healed = false;
    const long = 'the handler cannot take this event '.repeat(40);
    const handler = {
      handle: ({ seq }: HandledEvent) =>
        seq === 1n && !healed
          ? Promise.reject(new Error(long))
          : Promise.resolve(),
    };
    const { store, count } = counted(db.storeOf('a', () => false));
    const loop = new HandlerLoop(
      NAME,
      [HANDLED],
      handler,
      store,
      'a',
      new Logger('EventHandlers'),
      metrics,
    );
    await loop.declare();
    db.append(HANDLED);
    db.append(HANDLED);
    loop.start();
    // six pauses of 1, 2, 4, 8, 16 and 32 s: the seventh attempt is 63 s after the first
    expect(skippedWithinMs(DEFAULT_HANDLER_RETRY)).toBe(63_000);
    await jest.advanceTimersByTimeAsync(1000);
    // the two events wait behind the failing one
    expect(await metrics.eventHandlerLag.get()).toMatchObject({
      values: [{ labels: { handler: NAME }, value: 2 }],
    });
    await jest.advanceTimersByTimeAsync(61_000);
    expect(db.skipped).toEqual([]);
    // each attempt within a poll of its pause's end
    await jest.advanceTimersByTimeAsync(
      1000 + HANDLER_MAX_ATTEMPTS * HANDLER_POLL_MS,
    );
    expect(db.skipped).toMatchObject([
      { event: { seq: 1n }, attempts: HANDLER_MAX_ATTEMPTS, retry: false },
    ]);
    expect(db.skipped[0].error).toBe(long.slice(0, 1000));
    expect(errors.mock.calls.at(-1)?.[1]).toBe(
      `event handler ${NAME} gave up on plant.deleted evt_1 (its place in the log: 1) after 7 attempts, and goes on with the events after it; the event is kept: \`events skipped\` lists it, \`events retry ${NAME} 1\` tries it again (docs/operations.md, "Skipped events")`,
    );
    // the event after it goes on at once, not a poll later
    expect(db.effects.map(({ seq }) => seq)).toEqual([2n]);
    expect(db.effects[0].at - db.skipped[0].at).toBeLessThan(HANDLER_POLL_MS);
    expect(db.row!.cursor).toBe(2n);
    const runs = async () =>
      Object.fromEntries(
        (await metrics.eventHandlerRuns.get()).values.map(
          ({ labels, value }) => [`${labels.handler} ${labels.outcome}`, value],
        ),
      );
    expect(await runs()).toEqual({
      [`${NAME} failed`]: 7,
      [`${NAME} skipped`]: 1,
      [`${NAME} handled`]: 1,
    });
    await jest.advanceTimersByTimeAsync(1000);
    expect(await metrics.eventHandlerLag.get()).toMatchObject({
      values: [{ labels: { handler: NAME }, value: 0 }],
    });
    // no skipped event asked for: a turn never looks for one
    expect(count('retriesOf')).toBe(0);

    // a retry that fails again leaves it skipped, one attempt more
    db.skipped[0].retry = true;
    await jest.advanceTimersByTimeAsync(1000);
    expect(db.skipped).toMatchObject([
      { attempts: HANDLER_MAX_ATTEMPTS + 1, retry: false },
    ]);
    expect(db.skipped[0].error).toHaveLength(1000);
    expect(errors.mock.calls.at(-1)?.[1]).toBe(
      `event handler ${NAME} failed again at plant.deleted evt_1 (its place in the log: 1) on the retry asked for; it stays skipped`,
    );
    expect((await runs())[`${NAME} failed`]).toBe(8);

    // once the handler is fixed, a retry handles it, and it is skipped no longer; the turn
    // reads no event past the cursor, which is at the head
    healed = true;
    db.skipped[0].retry = true;
    const eventsRead = count('eventsAfter');
    await jest.advanceTimersByTimeAsync(1000);
    await loop.stop();
    expect(db.skipped).toEqual([]);
    expect(db.retried.map(({ seq }) => seq)).toEqual([1n]);
    expect(count('eventsAfter')).toBe(eventsRead);
    expect(logs).toHaveBeenCalledWith(
      `event handler ${NAME} handled plant.deleted evt_1 (its place in the log: 1), skipped after 8 attempts, on the retry asked for`,
    );
    expect((await runs())[`${NAME} handled`]).toBe(2);
  });

  it('handles nothing while the store moves (fenced), and goes on once it may', async () => {
    const db = new MemoryDatabase();
    let fenced = true;
    const loop = new HandlerLoop(
      NAME,
      [HANDLED],
      every(0),
      db.storeOf('a', () => false),
      'a',
      new Logger('EventHandlers'),
      new Metrics(false),
      Date.now,
      DEFAULT_HANDLER_RETRY,
      () => fenced,
    );
    await loop.declare();
    db.append(HANDLED);
    loop.start();
    await jest.advanceTimersByTimeAsync(5000);
    expect(db.row!.cursor).toBe(0n);
    fenced = false;
    await jest.advanceTimersByTimeAsync(HANDLER_POLL_MS + 100);
    await loop.stop();
    expect(db.row!.cursor).toBe(1n);
  });

  it('handles every skipped event asked for in one turn, and stops at one whose lease it lost', async () => {
    const db = new MemoryDatabase();
    const loop = new HandlerLoop(
      NAME,
      [HANDLED],
      every(0),
      db.storeOf('a', () => false),
      'a',
      new Logger('EventHandlers'),
      new Metrics(false),
    );
    await loop.declare();
    for (const seq of [1n, 2n, 3n]) {
      db.skipped.push({
        event: {
          id: `evt_${seq}`,
          type: HANDLED,
          seq,
          createdAt: new Date(),
          payload: '{}',
        },
        attempts: 7,
        at: Date.now(),
        instance: 'b',
        retry: seq !== 3n,
        error: 'failed',
      });
    }
    loop.start();
    await jest.advanceTimersByTimeAsync(50);
    expect(db.retried.map(({ seq }) => seq)).toEqual([1n, 2n]);
    expect(db.skipped.map(({ event }) => event.seq)).toEqual([3n]);
    // another instance holds the handler now: the retry is its
    db.skipped[0].retry = true;
    db.row!.leasedBy = 'b';
    db.row!.leasedUntil = new Date(Date.now() + HANDLER_LEASE_MS);
    await jest.advanceTimersByTimeAsync(1000);
    await loop.stop();
    expect(db.retried).toHaveLength(2);
  });

  it('holds back for a retry time only as far ahead as one is ever set', () => {
    const now = new Date(START);
    const ahead = (ms: number) => new Date(START + ms);
    expect(retryPending(null, now)).toBe(false);
    expect(retryPending(now, now)).toBe(false);
    expect(retryPending(ahead(1), now)).toBe(true);
    // the longest pause, and a minute past it for clocks that disagree
    expect(retryPending(ahead(HANDLER_MAX_RETRY_MS + 60_000), now)).toBe(true);
    expect(retryPending(ahead(HANDLER_MAX_RETRY_MS + 60_001), now)).toBe(false);
    expect(retryPending(ahead(3650 * 86_400_000), now)).toBe(false);
  });

  it('counts the failures of each event from its own first, whatever the events before it failed', async () => {
    const db = new MemoryDatabase();
    const loop = new HandlerLoop(
      NAME,
      [HANDLED],
      plannedHandler({
        failuresOf: new Map([
          [1n, 3],
          [2n, 1],
        ]),
        durationOf: () => 0,
      }),
      db.storeOf('a', () => false),
      'a',
      new Logger('EventHandlers'),
      new Metrics(false),
    );
    await loop.declare();
    db.append(HANDLED);
    db.append(HANDLED);
    loop.start();
    await jest.advanceTimersByTimeAsync(60_000);
    await loop.stop();
    expect(db.effects.map(({ seq }) => seq)).toEqual([1n, 2n]);
    expect(
      db.failures.map(({ failures, retryAt, at }) => [failures, retryAt - at]),
    ).toEqual([
      [1, 1000],
      [2, 2000],
      [3, 4000],
      // the second event's first failure: a second, not eight
      [1, 1000],
    ]);
  });

  it('reads the log in batches of HANDLER_BATCH, and goes on at once with the next', async () => {
    const db = new MemoryDatabase();
    const loop = new HandlerLoop(
      NAME,
      [HANDLED],
      plannedHandler({ failuresOf: new Map(), durationOf: () => 0 }),
      db.storeOf('a', () => false),
      'a',
      new Logger('EventHandlers'),
      new Metrics(false),
    );
    await loop.declare();
    for (let event = 0; event < HANDLER_BATCH * 2 + 1; event += 1) {
      db.append(HANDLED);
    }
    loop.start();
    await jest.advanceTimersByTimeAsync(1000);
    expect(db.effects).toHaveLength(HANDLER_BATCH * 2 + 1);
    // a millisecond each, and the next batch read as the last one ends, not a poll later
    expect(db.effects.at(-1)!.at - START).toBeLessThan(
      HANDLER_BATCH * 2 + 1 + HANDLER_POLL_MS,
    );
    await Promise.all([loop.stop(), jest.advanceTimersByTimeAsync(1000)]);
  });

  /** The store, with each of its calls counted, and the time of each. */
  function counted(store: HandlerStore) {
    const calls: Partial<Record<keyof HandlerStore, number[]>> = {};
    const wrapped = Object.fromEntries(
      Object.entries(store).map(([name, call]) => [
        name,
        (...args: unknown[]) => {
          (calls[name as keyof HandlerStore] ??= []).push(Date.now());
          return (call as (...args: unknown[]) => unknown)(...args);
        },
      ]),
    ) as unknown as HandlerStore;
    const count = (name: keyof HandlerStore) => calls[name]?.length ?? 0;
    return { store: wrapped, calls, count };
  }

  function loopOn(
    store: HandlerStore,
    handler: { handle(event: HandledEvent): Promise<void> },
    { instance = 'a', metrics = new Metrics(false) } = {},
  ) {
    return new HandlerLoop(
      NAME,
      [HANDLED],
      handler,
      store,
      instance,
      new Logger('EventHandlers'),
      metrics,
    );
  }

  const every = (ms: number) =>
    plannedHandler({ failuresOf: new Map(), durationOf: () => ms });

  /** A handler whose first call throws `error`, and every later one succeeds. */
  const failingOnce = (error: Error) => {
    let calls = 0;
    return {
      handle: () => {
        calls += 1;
        return calls === 1 ? Promise.reject(error) : Promise.resolve();
      },
    };
  };

  it('logs a failure as an error line naming the event, its attempt and its pause, counts it, and keeps 1000 characters of it', async () => {
    const db = new MemoryDatabase();
    const metrics = new Metrics(false);
    const errors = jest.mocked(Logger.prototype.error);
    const loop = loopOn(
      db.storeOf('a', () => false),
      failingOnce(new Error('x'.repeat(5000))),
      { metrics },
    );
    await loop.declare();
    db.append(HANDLED);
    loop.start();
    await jest.advanceTimersByTimeAsync(5000);
    await loop.stop();
    expect(errors.mock.calls.map(([, message]) => message as string)).toEqual([
      'event handler care.plant-deleted failed at plant.deleted evt_1 (its place in the log: 1), attempt 1 of 7; the events after it wait, and it is tried again in 1 s',
    ]);
    expect(db.failures.map(({ error }) => error.length)).toEqual([1000]);
    const runs = (await metrics.eventHandlerRuns.get()).values;
    expect(
      runs.map(({ labels, value }) => [labels.handler, labels.outcome, value]),
    ).toEqual([
      [NAME, 'failed', 1],
      [NAME, 'handled', 1],
    ]);
  });

  it('logs no error line for a conflict the handler met, nor for the database away, and runs again', async () => {
    const db = new MemoryDatabase();
    const errors = jest.mocked(Logger.prototype.error);
    // a serialization failure, as the driver reports it
    const loop = loopOn(
      db.storeOf('a', () => false),
      failingOnce(
        Object.assign(new Error('could not serialize access'), {
          code: '40001',
        }),
      ),
    );
    await loop.declare();
    db.append(HANDLED);
    db.away.push({ from: START + 3000, to: START + 4000 });
    loop.start();
    await jest.advanceTimersByTimeAsync(2000);
    expect(db.effects).toHaveLength(1);
    db.append(HANDLED);
    await jest.advanceTimersByTimeAsync(6000);
    await loop.stop();
    expect(db.effects.map(({ seq }) => seq)).toEqual([1n, 2n]);
    expect(errors).not.toHaveBeenCalled();
  });

  it('logs an error line when a turn fails for another reason than the database, and runs again a second later', async () => {
    const db = new MemoryDatabase();
    const errors = jest.mocked(Logger.prototype.error);
    const store = db.storeOf('a', () => false);
    let broken = true;
    const loop = loopOn(
      {
        ...store,
        head: () =>
          broken ? Promise.reject(new Error('a bug')) : store.head(),
      },
      every(0),
    );
    await loop.declare();
    db.append(HANDLED);
    loop.start();
    await jest.advanceTimersByTimeAsync(10);
    broken = false;
    expect(errors.mock.calls.map(([, message]) => message as string)).toEqual([
      'event handler care.plant-deleted could not run',
    ]);
    await jest.advanceTimersByTimeAsync(990);
    expect(db.effects).toHaveLength(0);
    await jest.advanceTimersByTimeAsync(20);
    expect(db.effects).toHaveLength(1);
    await loop.stop();
  });

  it('renews its lease every third of it through a long batch, so no other instance takes it over', async () => {
    const db = new MemoryDatabase();
    const a = counted(db.storeOf('a', () => false));
    const loops = [
      loopOn(a.store, every(1000)),
      loopOn(
        db.storeOf('b', () => false),
        every(1000),
        { instance: 'b' },
      ),
    ];
    for (const loop of loops) await loop.declare();
    for (let event = 0; event < 50; event += 1) db.append(HANDLED);
    loops[0].start();
    await jest.advanceTimersByTimeAsync(1);
    loops[1].start();
    await jest.advanceTimersByTimeAsync(55_000);
    await Promise.all([
      ...loops.map((loop) => loop.stop()),
      jest.advanceTimersByTimeAsync(2000),
    ]);
    expect(db.effects.map(({ instance }) => instance)).toEqual(
      Array<string>(50).fill('a'),
    );
    expect(db.attempts.filter(({ outcome }) => outcome === 'lost')).toEqual([]);
    // past each third of the lease: 11, 22, 33 and 44 s in
    expect(a.calls.renew?.map((at) => at - START)).toEqual([
      11_000, 22_000, 33_000, 44_000,
    ]);
  });

  it('stops after the event in hand, and makes no call after it has stopped', async () => {
    const db = new MemoryDatabase();
    const a = counted(db.storeOf('a', () => false));
    const loop = loopOn(a.store, every(1000));
    await loop.declare();
    for (let event = 0; event < 10; event += 1) db.append(HANDLED);
    loop.start();
    await jest.advanceTimersByTimeAsync(2500);
    const stopped = loop.stop();
    await jest.advanceTimersByTimeAsync(1000);
    await stopped;
    expect(db.effects).toHaveLength(3);
    const calls = Object.values(a.calls).flat().length;
    await jest.advanceTimersByTimeAsync(10_000);
    expect(Object.values(a.calls).flat()).toHaveLength(calls);
  });

  it('while idle, reads its row each poll and takes no lease; after a turn, gives the lease back', async () => {
    const db = new MemoryDatabase();
    const a = counted(db.storeOf('a', () => false));
    const loop = loopOn(a.store, every(0));
    await loop.declare();
    db.append(HANDLED);
    loop.start();
    await jest.advanceTimersByTimeAsync(100);
    expect(db.effects).toHaveLength(1);
    expect(db.row!.leasedBy).toBeNull();
    expect(a.count('claim')).toBe(1);
    await jest.advanceTimersByTimeAsync(10_000);
    await loop.stop();
    expect(a.count('claim')).toBe(1);
    expect(a.count('row')).toBeGreaterThanOrEqual(10_000 / HANDLER_POLL_MS);
    expect(a.count('row')).toBeLessThanOrEqual(10_000 / HANDLER_POLL_MS + 2);
  });

  it('waits out a pending retry, looking at its row every 2 s at most, and tries again as it ends', async () => {
    const db = new MemoryDatabase();
    const a = counted(db.storeOf('a', () => false));
    const loop = loopOn(a.store, every(0));
    await loop.declare();
    db.append(HANDLED);
    db.row!.retryAt = new Date(START + 60_000);
    loop.start();
    await jest.advanceTimersByTimeAsync(59_000);
    expect(db.effects).toHaveLength(0);
    expect(a.count('claim')).toBe(0);
    // each look waits the rest of the pause, 2 s at most
    expect(a.count('row')).toBeGreaterThanOrEqual(59_000 / 2000);
    expect(a.count('row')).toBeLessThanOrEqual(59_000 / 2000 + 2);
    await jest.advanceTimersByTimeAsync(1000 + HANDLER_POLL_MS + 1);
    expect(db.effects).toHaveLength(1);
    await loop.stop();
  });

  it('comes back for a retry due in less than its 2 s look as it comes due', async () => {
    const db = new MemoryDatabase();
    const loop = loopOn(
      db.storeOf('a', () => false),
      every(0),
    );
    await loop.declare();
    db.append(HANDLED);
    db.row!.retryAt = new Date(START + 500);
    loop.start();
    await jest.advanceTimersByTimeAsync(500 + HANDLER_POLL_MS + 1);
    expect(db.effects).toHaveLength(1);
    await loop.stop();
  });

  it('handles no event past the head it read: one still being sequenced waits for the next turn', async () => {
    const db = new MemoryDatabase();
    const store = db.storeOf('a', () => false);
    const loop = loopOn(
      { ...store, head: () => Promise.resolve(1n) },
      every(0),
    );
    await loop.declare();
    db.append(HANDLED);
    db.append(HANDLED);
    loop.start();
    await jest.advanceTimersByTimeAsync(1000);
    await loop.stop();
    expect(db.effects.map(({ seq }) => seq)).toEqual([1n]);
  });
});
