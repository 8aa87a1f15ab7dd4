import { Column, Entity, Index } from 'typeorm';
import {
  Int64PrimaryColumn,
  VersionNumberColumn,
} from '../../platform/database';

// Keyset pages filtered by tag scan one of these, from the cursor on: a tag shorter than
// TAG_PREFIX_LENGTH characters is its own entry in the index on the first TAG_PREFIX_LENGTH
// characters and the id; a longer one is found whole in the long-tag index (a partial index of
// those tags, by SHA-256 digest on PostgreSQL). Expression indexes, which TypeORM cannot
// declare: the PlantsTagPrefixIndex and LongTagIndex migrations make them.
@Index('IDX_plants_tag_prefix_id', { synchronize: false })
@Index('IDX_plants_long_tag_id', { synchronize: false })
@Entity('plants')
export class Plant {
  /** Supplied by the client; a true int64. */
  @Int64PrimaryColumn()
  id!: bigint;

  @Column({ type: 'text' })
  name!: string;

  @Column({ type: 'text', nullable: true })
  tag!: string | null;

  /**
   * 1 when added, one more at each change: its ETag, never in its body, which is the
   * specification's Plant (docs/decisions.md, "Updates").
   */
  @VersionNumberColumn({ default: 1 })
  version: number = 1;
}
