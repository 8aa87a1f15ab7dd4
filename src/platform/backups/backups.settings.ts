import { defineSettings, setting } from '../config/module-settings';

/** Scheduled backups (docs/operations.md, "Backups and restores"): off until BACKUP_DIR is set. */
export const backupSettings = defineSettings('backups', {
  BACKUP_DIR: setting.text({
    description:
      'The folder scheduled backups are written to, shared by every instance; unset, none are taken',
    example: '/var/backups/plant-store',
  }),
  BACKUP_EVERY: setting.duration({
    default: '1d',
    example: '6h',
    description:
      'How often a scheduled backup is taken, by one instance of all',
  }),
  BACKUP_KEEP: setting.integer(1, 1000, {
    default: '7',
    example: '30',
    description:
      'How many scheduled backups are kept: after a good one, the oldest beyond these are removed',
  }),
});

export type BackupSettings = ReturnType<typeof backupSettings>;
