import { hostname } from 'node:os';
import {
  Injectable,
  Logger,
  Optional,
  type OnApplicationShutdown,
  type OnModuleInit,
} from '@nestjs/common';
import { DataSource } from 'typeorm';
import { Metrics } from '../metrics/metrics';

/** How often the offset to the database's clock is measured again. */
export const CLOCK_CHECK_INTERVAL_MS = 30_000;
/** How soon a measurement that failed is tried again. */
const CLOCK_RETRY_MS = 5_000;
/** An offset larger than this is logged: the instance's own clock is off. */
export const CLOCK_OFF_AFTER_MS = 2_000;
/** A measurement whose round trip took longer is too blurred to use: the last offset stays. */
const MAX_ROUND_TRIP_MS = 1_000;

/**
 * How far past its furthest legitimate value a stored time may lie before it is taken for one
 * written by a clock that was ahead, and disregarded (docs/decisions.md, "Time that decides
 * for others"): a lease, a done tick or a retry time that far ahead no longer holds anything.
 */
export const STORED_TIME_SLACK_MS = 60_000;

/** The database's time now, in ms since the epoch, as one statement of either engine reads it. */
const DATABASE_NOW = {
  postgres:
    'SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms',
  sqlite:
    "SELECT CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) AS ms",
};

/**
 * The time every instance agrees on (docs/decisions.md, "Time that decides for others"): this
 * instance's clock, corrected by its offset to the database server's, measured at start and
 * every CLOCK_CHECK_INTERVAL_MS. Leases, schedules, retry times and retention cut-offs read it,
 * so that one instance whose clock is off decides nothing for the others; that instance says
 * so in a warn line naming it, and in `plant_store_clock_offset_seconds`. Reading it costs no
 * statement.
 */
@Injectable()
export class DatabaseClockService
  implements OnModuleInit, OnApplicationShutdown
{
  // the context its lines have always had, which log readers filter on
  private readonly logger = new Logger('DatabaseClock');
  private readonly instance = `${hostname()}:${process.pid}`;
  /** How far this instance's clock is ahead of the database's (behind when negative), in ms. */
  private aheadMs = 0;
  private off = false;
  private timer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly dataSource: DataSource,
    @Optional() private readonly metrics?: Metrics,
  ) {}

  /** The database's time now, in ms since the epoch. */
  now(): number {
    return Date.now() - this.aheadMs;
  }

  /** The database's time now. */
  date(): Date {
    return new Date(this.now());
  }

  async onModuleInit(): Promise<void> {
    if (this.metrics?.enabled) {
      const offsetSeconds = () => this.aheadMs / 1000;
      this.metrics.gauge(
        'plant_store_clock_offset_seconds',
        "How far this instance's clock is ahead of the database server's (negative: behind); leases, schedules and cut-offs take the database's time",
        [],
        function () {
          this.set(offsetSeconds());
        },
      );
    }
    await this.check();
  }

  onApplicationShutdown(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  /** Measures the offset now, and again after CLOCK_CHECK_INTERVAL_MS (sooner after a failure). */
  async check(): Promise<void> {
    clearTimeout(this.timer);
    let nextInMs = CLOCK_CHECK_INTERVAL_MS;
    try {
      await this.measure();
    } catch (error) {
      nextInMs = CLOCK_RETRY_MS;
      this.logger.debug(
        `the database's clock could not be read (${(error as Error).message}): the last offset, ${this.aheadMs} ms, stays`,
      );
    }
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.check(), nextInMs);
    this.timer.unref();
  }

  private async measure(): Promise<void> {
    const sent = Date.now();
    const [row]: { ms: number | bigint | string }[] =
      await this.dataSource.query(
        this.dataSource.options.type === 'postgres'
          ? DATABASE_NOW.postgres
          : DATABASE_NOW.sqlite,
      );
    const received = Date.now();
    if (received - sent > MAX_ROUND_TRIP_MS) return;
    this.aheadMs = Math.round((sent + received) / 2 - Number(row.ms));
    this.report();
  }

  private report(): void {
    const offset = this.aheadMs;
    const off = Math.abs(offset) > CLOCK_OFF_AFTER_MS;
    if (off) {
      // said at every measurement while it lasts: an operator must find the instance
      this.logger.warn(
        { instance: this.instance, clockOffsetMs: offset },
        `this instance's clock (${this.instance}) is ${Math.abs(offset)} ms ${offset > 0 ? 'ahead of' : 'behind'} the database server's: it takes the database's time for leases, schedules and cut-offs; set the machine's time right (NTP)`,
      );
    } else if (this.off) {
      this.logger.log(
        { instance: this.instance, clockOffsetMs: offset },
        `this instance's clock (${this.instance}) agrees with the database server's again`,
      );
    }
    this.off = off;
  }
}
