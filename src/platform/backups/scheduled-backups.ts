import { execFile } from 'node:child_process';
import { readdirSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Inject, Logger } from '@nestjs/common';
import {
  Job,
  type JobRun,
  type JobSchedule,
  type PeriodicJob,
} from '../jobs/job.decorator';
import { Metrics } from '../metrics/metrics';
import { backupSettings, type BackupSettings } from './backups.settings';

/** What a scheduled backup is named: its tick, so that names sort as times do. */
const ARCHIVE_NAME =
  /^plant-store-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z\.archive$/;

/** The operator's tool, built beside the service. */
const CLI = join(__dirname, '..', '..', 'cli.js');

export function archiveNameOf(tick: Date): string {
  return `plant-store-${tick.toISOString().slice(0, 19).replaceAll(':', '-')}Z.archive`;
}

/**
 * Takes a backup into BACKUP_DIR every BACKUP_EVERY, on one instance of all, and keeps the
 * BACKUP_KEEP newest (docs/operations.md, "Backups and restores"). The backup is the
 * operator's own `backup` command, in a process of its own, so that its reading, hashing and
 * compressing take another core than the requests'. A failed one is a warn line and
 * `plant_store_backups_total{outcome="failed"}`, never an error the API sees; the next tick
 * tries again. `plant_store_backup_age_seconds` is the age of the newest archive in the folder.
 */
@Job('backups.scheduled')
export class ScheduledBackups implements PeriodicJob {
  private readonly logger = new Logger(ScheduledBackups.name);
  readonly schedule: JobSchedule;

  constructor(
    @Inject(backupSettings.KEY) private readonly settings: BackupSettings,
    private readonly metrics: Metrics,
  ) {
    // a lease long enough for a backup of a large store; the run's process ends by then
    this.schedule = { every: settings.BACKUP_EVERY, lease: '30m' };
    const folder = settings.BACKUP_DIR;
    if (folder && metrics.enabled) {
      metrics.gauge(
        'plant_store_backup_age_seconds',
        `Seconds since the newest scheduled backup in BACKUP_DIR was written; absent before the first`,
        [],
        function () {
          const newest = newestArchive(folder);
          if (newest) this.set((Date.now() - newest.writtenAt) / 1000);
        },
      );
    }
  }

  async run(run: JobRun): Promise<boolean> {
    const folder = this.settings.BACKUP_DIR;
    if (!folder) return false;
    const file = join(folder, archiveNameOf(run.tick));
    const started = performance.now();
    try {
      const lastLine = await backupInAProcess(file, run.signal);
      this.metrics.backups.inc({ outcome: 'done' });
      this.logger.log(
        { file, seconds: (performance.now() - started) / 1000 },
        `scheduled backup: ${lastLine}`,
      );
      this.keepNewest(folder);
    } catch (error) {
      // a backup stopped by a signal (the service's shutdown) leaves its partial file
      rmSync(`${file}.partial`, { force: true });
      if (run.signal.aborted) return false;
      this.metrics.backups.inc({ outcome: 'failed' });
      this.logger.warn(
        { file },
        `scheduled backup into ${file} failed, the next tick tries again: ${(error as Error).message}`,
      );
    }
    return false;
  }

  /** Removes the scheduled backups beyond the BACKUP_KEEP newest; nothing else in the folder. */
  private keepNewest(folder: string): void {
    const archives = readdirSync(folder)
      .filter((name) => ARCHIVE_NAME.test(name))
      .sort();
    for (const name of archives.slice(
      0,
      Math.max(0, archives.length - this.settings.BACKUP_KEEP),
    )) {
      rmSync(join(folder, name), { force: true });
    }
  }
}

function newestArchive(folder: string): { writtenAt: number } | undefined {
  try {
    const newest = readdirSync(folder)
      .filter((name) => ARCHIVE_NAME.test(name))
      .sort()
      .at(-1);
    return newest
      ? { writtenAt: statSync(join(folder, newest)).mtimeMs }
      : undefined;
  } catch {
    return undefined;
  }
}

/** `node dist/cli.js backup FILE` with the service's environment; its last line, or why not. */
function backupInAProcess(file: string, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [CLI, 'backup', file],
      { env: process.env, signal, maxBuffer: 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) {
          const said = stderr
            .split('\n')
            .find((line) => line.startsWith('error: '));
          reject(new Error(said?.slice('error: '.length) ?? error.message));
          return;
        }
        resolve(stdout.trimEnd().split('\n').at(-1) ?? '');
      },
    );
  });
}
