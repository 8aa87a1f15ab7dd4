import { Column, Entity, PrimaryColumn } from 'typeorm';
import { bigintTransformer } from '../database/bigint.transformer';

@Entity('plants')
export class Plant {
  /** Supplied by the client; a true int64. */
  @PrimaryColumn({ type: 'bigint', transformer: bigintTransformer })
  id!: bigint;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text', nullable: true })
  tag!: string | null;
}
