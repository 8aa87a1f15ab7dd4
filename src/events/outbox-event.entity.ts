import { Column, Entity, Index, PrimaryColumn } from 'typeorm';

/**
 * The outbox: one row per event, `(type, JSON payload)`, written by a database trigger in the
 * very statement that makes the change (see event-triggers.ts), so an event exists exactly when
 * its change was committed, whatever runs beside it on the connection. Consumers read it from
 * here; an event that no consumer wants (the `event_consumers` view) is not written.
 */
@Entity('events')
// retention deletes the oldest first
@Index('IDX_events_created_at', ['createdAt'])
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
}
