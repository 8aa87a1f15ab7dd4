import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { testLimit } from './helpers/pace';
import { runCliProcess, startServiceProcess } from './helpers/service-process';
import { freePort } from './helpers/ports';
import {
  databaseForProcesses,
  ENGINE,
  makeTempFolder,
} from './helpers/test-app';
import { eventually } from './helpers/webhook-receiver';

// docs/operations.md, "Backups and restores": BACKUP_DIR, BACKUP_EVERY and BACKUP_KEEP
describe(`scheduled backups (${ENGINE})`, () => {
  let folder: ReturnType<typeof makeTempFolder>;
  let store: Awaited<ReturnType<typeof databaseForProcesses>>;

  beforeEach(async () => {
    folder = makeTempFolder();
    store = await databaseForProcesses();
  });

  afterEach(async () => {
    await store.drop();
    folder.remove();
  });

  const archivesIn = (path: string) =>
    readdirSync(path)
      .filter((name) => name.endsWith('.archive'))
      .sort();

  const metricsOf = async (port: number) =>
    (await fetch(`http://127.0.0.1:${port}/metrics`)).text();

  it('takes one every BACKUP_EVERY, keeps the BACKUP_KEEP newest, and says so in a line and a metric', async () => {
    const metricsPort = await freePort();
    const service = await startServiceProcess({
      DATABASE_URL: store.url,
      LOG_LEVEL: 'info',
      METRICS_PORT: String(metricsPort),
      BACKUP_DIR: folder.path,
      BACKUP_EVERY: '1s',
      BACKUP_KEEP: '2',
    });
    try {
      const lines = await eventually(
        () =>
          service
            .lines()
            .filter(({ msg }) => msg.startsWith('scheduled backup: ')),
        (found) => found.length >= 4,
        testLimit(30_000),
      );
      expect(lines[0].msg).toMatch(
        /^scheduled backup: backed up \d+ tables and [\d,]+ rows to .*plant-store-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}Z\.archive/,
      );
      const metrics = await metricsOf(metricsPort);
      expect(metrics).toMatch(
        /^plant_store_backups_total\{outcome="done"\} \d+$/m,
      );
      const age = /^plant_store_backup_age_seconds (\S+)$/m.exec(metrics);
      expect(Number(age?.[1])).toBeLessThan(10);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    // once it has stopped: the newest kept, the older ones removed after each good one
    const kept = archivesIn(folder.path);
    expect(kept.length).toBe(2);
    for (const archive of kept) {
      const verified = await runCliProcess(
        ['verify', join(folder.path, archive)],
        {},
      );
      expect(verified.lastLine).toMatch(/^the archive is whole: /);
    }
    // nothing but archives, whole: no partial file left behind by the stop
    expect(
      readdirSync(folder.path).filter((name) => !name.endsWith('.archive')),
    ).toEqual([]);
  });

  it('logs a failed backup as a warn line and counts it, and the API never sees it', async () => {
    const metricsPort = await freePort();
    const missing = join(folder.path, 'no-such-folder');
    const service = await startServiceProcess({
      DATABASE_URL: store.url,
      LOG_LEVEL: 'warn',
      METRICS_PORT: String(metricsPort),
      BACKUP_DIR: missing,
      BACKUP_EVERY: '1s',
    });
    try {
      const [failed] = await eventually(
        () =>
          service
            .lines()
            .filter(({ msg }) => msg.startsWith('scheduled backup into ')),
        (found) => found.length > 0,
        testLimit(30_000),
      );
      expect(failed.level).toBe(40);
      expect(failed.msg).toContain(`${missing}/plant-store-`);
      expect(failed.msg).toContain('failed, the next tick tries again: ');
      expect(await metricsOf(metricsPort)).toMatch(
        /^plant_store_backups_total\{outcome="failed"\} [1-9]\d*$/m,
      );
      expect((await fetch(`${service.baseUrl}/health/ready`)).status).toBe(200);
      expect(service.lines().filter(({ level }) => level >= 50)).toEqual([]);
    } finally {
      service.child.kill('SIGTERM');
      await service.exited;
    }
    expect(existsSync(missing)).toBe(false);
  });
});
