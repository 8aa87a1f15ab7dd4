import { Column, Entity, Index, PrimaryColumn } from 'typeorm';
import { Int64Column } from '../database/columns';

/**
 * The outbox: one row per event, `(type, JSON payload)`, written by a database trigger in the
 * very statement that makes the change (see event-triggers.ts), so an event exists exactly when
 * its change was committed, whatever runs beside it on the connection. Once committed it is
 * given its place in the event log (`seq`), which consumers read in order from a cursor of
 * their own; an event that no consumer wants (the `event_consumers` view) is not written.
 */
@Entity('events')
// retention deletes the oldest first
@Index('IDX_events_created_at', ['createdAt'])
// each consumer reads the log from its cursor on
@Index('UQ_events_seq', ['seq'], { unique: true, where: '"seq" IS NOT NULL' })
// the events still waiting for their place, oldest first
@Index('IDX_events_unsequenced', ['createdAt', 'id'], {
  where: '"seq" IS NULL',
})
export class OutboxEvent {
  /** `evt_` and 32 hexadecimal digits, made by the trigger. */
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  /** A declared event type (EventCatalogue), such as `plant.added`. */
  @Column({ type: 'varchar', length: 64 })
  type!: string;

  /** The changed row's columns as a JSON object, NULL for a column without a value. */
  @Column({ type: 'text' })
  payload!: string;

  @Column({ name: 'created_at', type: Date })
  createdAt!: Date;

  /** Its place in the event log; null until the dispatcher's sequencing gives it one. */
  @Int64Column({ nullable: true })
  seq!: bigint | null;
}
