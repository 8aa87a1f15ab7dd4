import {
  Injectable,
  Logger,
  type OnApplicationBootstrap,
} from '@nestjs/common';
import { DataSource } from 'typeorm';

/**
 * PostgreSQL's autovacuum is what reclaims the rows retention and the idempotency sweep
 * delete, and what keeps the planner's statistics current (docs/operations.md, "In
 * production"). Off on the server, or on one of the service's tables, it is said at boot, a
 * line each: nothing fails at once, the tables and their indexes only grow and plans go stale.
 */
@Injectable()
export class AutovacuumCheckService implements OnApplicationBootstrap {
  private readonly logger = new Logger('Autovacuum');

  constructor(private readonly dataSource: DataSource) {}

  async onApplicationBootstrap(): Promise<void> {
    if (this.dataSource.options.type !== 'postgres') return;
    try {
      for (const warning of await this.warnings()) this.logger.warn(warning);
    } catch {
      // a look that fails is no reason to stop: readiness says whether the database answers
    }
  }

  private async warnings(): Promise<string[]> {
    const tables = this.dataSource.entityMetadatas
      .filter((entity) => entity.tableType !== 'view')
      .map((entity) => entity.tablePath);
    const [{ autovacuum, without }] = await this.dataSource.query<
      { autovacuum: string; without: string[] | null }[]
    >(
      `SELECT current_setting('autovacuum') AS autovacuum,
              (SELECT array_agg(relname::text ORDER BY relname) FROM pg_class
               WHERE relname = ANY($1) AND relnamespace = current_schema()::regnamespace
               AND reloptions @> ARRAY['autovacuum_enabled=false']) AS without`,
      [tables],
    );
    const consequence =
      'the rows that retention and the idempotency sweep delete are never reclaimed, the tables and their indexes only grow, and the planner works from stale statistics';
    const warnings: string[] = [];
    if (autovacuum !== 'on') {
      warnings.push(
        `PostgreSQL's autovacuum is off: ${consequence}; turn it on (autovacuum = on in postgresql.conf)`,
      );
    }
    if (without !== null && without.length > 0) {
      warnings.push(
        `PostgreSQL's autovacuum is off for ${without.join(', ')} (autovacuum_enabled = false): ${consequence}; turn it on (ALTER TABLE ${without[0]} RESET (autovacuum_enabled))`,
      );
    }
    return warnings;
  }
}
