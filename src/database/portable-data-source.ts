import { DataSource } from 'typeorm';

/** How TypeORM spells a timestamp without a time zone on PostgreSQL, before normalising. */
const ZONELESS_TIMESTAMP_TYPES: unknown[] = [
  Date,
  'timestamp',
  'timestamp without time zone',
];

/**
 * TypeORM's DataSource, with the one column type that TypeORM cannot spell for both engines
 * from one entity: an instant. SQLite keeps `datetime` text in UTC; on PostgreSQL a `Date`
 * column would be `timestamp without time zone`, which shifts instants with the server's and
 * the service's time zones, so every timestamp there is `timestamptz`, as the migrations
 * create it. Entities keep writing `@Column({ type: Date })` and `@CreateDateColumn()`.
 *
 * The service (database.module.ts) and the TypeORM CLI (ormconfig.ts) both use this class, so
 * `npm run migration:generate` compares the migrated schema with what the service reads.
 */
export class PortableDataSource extends DataSource {
  protected override async buildMetadatas(): Promise<void> {
    await super.buildMetadatas();
    if (this.options.type !== 'postgres') return;
    for (const metadata of this.entityMetadatas) {
      for (const column of metadata.columns) {
        if (ZONELESS_TIMESTAMP_TYPES.includes(column.type)) {
          column.type = 'timestamptz';
        }
      }
    }
  }
}
