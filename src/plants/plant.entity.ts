import { Column, Entity, Index } from 'typeorm';
import { Int64PrimaryColumn } from '../database/columns';

// keyset pages filtered by tag scan this index from the cursor on
@Index('IDX_plants_tag_id', ['tag', 'id'])
@Entity('plants')
export class Plant {
  /** Supplied by the client; a true int64. */
  @Int64PrimaryColumn()
  id!: bigint;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text', nullable: true })
  tag!: string | null;
}
