import { Injectable, Optional, type OnModuleInit } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { DependencyState } from '../logging/dependency-state';
import { isWriteRefused } from './database-errors';
import { PortableDataSource } from './portable-data-source';

/**
 * The database's availability as requests, readiness and the webhook dispatcher meet it:
 * an outage is logged once when it begins and once when it ends. A database that still
 * answers reads but refuses writes (a full disk, a read-only file) is an outage of its own,
 * which reads do not end: only a committed write does.
 */
@Injectable()
export class DatabaseAvailabilityService
  extends DependencyState
  implements OnModuleInit
{
  private readonly writes = new DependencyState('Database', {
    away: 'refuses writes',
    meanwhile: 'writes get 503 until it takes them again; reads are served',
    back: 'takes writes again',
    onReturn: 'serving writes again',
  });

  constructor(@Optional() private readonly dataSource?: DataSource) {
    super('Database', {
      meanwhile:
        'requests that need it get 503 and readiness is 503 until it does',
      onReturn: 'serving again',
    });
  }

  onModuleInit(): void {
    if (this.dataSource instanceof PortableDataSource) {
      this.dataSource.afterCommit(() => this.writes.cameBack());
    }
  }

  override wentAway(cause: unknown): void {
    if (isWriteRefused(cause)) {
      this.writes.wentAway(cause);
      return;
    }
    super.wentAway(cause);
    // the work waiting for a connection would only meet the same: it is told at once
    if (this.dataSource instanceof PortableDataSource) {
      this.dataSource.refuseWaiting(cause);
    }
  }
}
