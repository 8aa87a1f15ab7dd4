import { Column, Entity, PrimaryColumn } from 'typeorm';

/**
 * A move of the store to another database (`node dist/cli.js move`, docs/operations.md,
 * "Moving to PostgreSQL"): while one has begun and not been abandoned, every instance on this
 * database refuses writes and runs no jobs, handlers or deliveries (StoreFenceService). Kept after the
 * move, so that an instance started on the old database later says where the store went.
 */
@Entity('store_moves')
export class StoreMove {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id!: string;

  /** Where the store goes, without a password. */
  @Column({ type: 'text' })
  target!: string;

  /** When writes began to be refused. */
  @Column({ name: 'started_at', type: Date })
  startedAt!: Date;

  /** When no write could reach this database any more: the copy's snapshot follows. */
  @Column({ name: 'fenced_at', type: Date, nullable: true })
  fencedAt!: Date | null;

  @Column({ name: 'ended_at', type: Date, nullable: true })
  endedAt!: Date | null;

  /** `moved` once the target holds the store, checked; `abandoned` when the move failed. */
  @Column({ type: 'varchar', length: 16, nullable: true })
  outcome!: 'moved' | 'abandoned' | null;
}
