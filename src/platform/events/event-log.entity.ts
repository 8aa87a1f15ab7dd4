import { Check, Entity, PrimaryColumn } from 'typeorm';
import { Int64Column } from '../database/columns';

/**
 * The head of the event log: the place given to the newest event (`events.seq`). One row. The
 * places are given in batches, one batch at a time, to events already committed
 * (SqlDeliveryStore.sequence), so the log only grows at its end: a reader at place n never
 * meets an event placed before n later (docs/decisions.md, "Webhook delivery").
 */
@Entity('event_log')
@Check('CHK_event_log_one_row', '"id" = 1')
export class EventLog {
  @PrimaryColumn({ type: 'smallint' })
  id!: number;

  @Int64Column({ name: 'last_seq' })
  lastSeq!: bigint;
}
