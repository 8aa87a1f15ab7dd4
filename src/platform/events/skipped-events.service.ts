import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, IsNull, type Repository } from 'typeorm';
import { DatabaseClockService } from '../database/database-clock.service';
import { SkippedEvent } from './skipped-event.entity';

/**
 * The events handlers gave up on, as an operator sees and acts on them (`events skipped`,
 * `events retry`, `events dismiss`): a retry is a request the handler's next turn answers,
 * on whichever instance runs it, in the handler's own code and transaction.
 */
@Injectable()
export class SkippedEventsService {
  constructor(
    @InjectRepository(SkippedEvent)
    private readonly skipped: Repository<SkippedEvent>,
    private readonly clock: DatabaseClockService,
  ) {}

  /** Every skipped event, by handler, oldest first; `limit` at most. */
  list(limit: number): Promise<SkippedEvent[]> {
    return this.skipped.find({
      order: { handler: 'ASC', seq: 'ASC' },
      take: limit,
    });
  }

  /**
   * Asks `handler` to try again the skipped events at `seqs` (every one of its skipped events
   * when undefined); says how many it asked for, those already asked for included.
   */
  async requestRetry(handler: string, seqs?: bigint[]): Promise<number> {
    const where = seqs === undefined ? { handler } : { handler, seq: In(seqs) };
    await this.skipped.update(
      { ...where, retryRequestedAt: IsNull() },
      { retryRequestedAt: this.clock.date() },
    );
    return this.skipped.countBy(where);
  }

  /** Forgets the skipped event at `seq` of `handler`: it is not handled; says whether there was one. */
  async dismiss(handler: string, seq: bigint): Promise<boolean> {
    const { affected } = await this.skipped.delete({ handler, seq });
    return affected === 1;
  }

  /** How many events each handler has skipped, for the metrics. */
  async counts(): Promise<Map<string, number>> {
    const rows = await this.skipped
      .createQueryBuilder('skipped')
      .select('skipped.handler', 'handler')
      .addSelect('COUNT(*)', 'count')
      .groupBy('skipped.handler')
      .getRawMany<{ handler: string; count: string | number | bigint }>();
    return new Map(rows.map(({ handler, count }) => [handler, Number(count)]));
  }
}
