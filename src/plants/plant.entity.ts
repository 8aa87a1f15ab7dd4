import { Column, Entity, Index } from 'typeorm';
import { Int64PrimaryColumn } from '../database/columns';

// Keyset pages filtered by tag scan this index, on the tag's first TAG_PREFIX_LENGTH
// characters and the id, from the cursor on; a whole long tag would not fit an index entry.
// An expression index, which TypeORM cannot declare: the PlantsTagPrefixIndex migrations make it.
@Index('IDX_plants_tag_prefix_id', { synchronize: false })
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
