import { Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { backupSettings } from './backups.settings';
import { ScheduledBackups } from './scheduled-backups';

/**
 * Scheduled backups of the whole store (docs/operations.md, "Backups and restores"); backup,
 * restore, verify and move themselves are the operator's tool's (src/cli/backups.command.ts).
 */
@Module({
  imports: [ConfigModule.forFeature(backupSettings)],
  providers: [ScheduledBackups],
})
export class BackupsModule {}
