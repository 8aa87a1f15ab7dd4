import { testLimit } from './helpers/pace';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './helpers/service-process';
import { makeTempFolder } from './helpers/test-app';

/** Whether a process of that pid is running (and not a zombie). */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return !/^State:\s+Z/m.test(status);
}

describe('a test that times out', () => {
  it(
    'leaves no service running: its file kills what it started',
    () => {
      const folder = makeTempFolder();
      try {
        const pidFile = join(folder.path, 'pid');
        const run = spawnSync(
          process.execPath,
          [
            join(ROOT, 'node_modules', 'jest', 'bin', 'jest.js'),
            // compiled as the unit tests are, from a folder no project of the suite reads
            '--config',
            join(ROOT, 'jest.unit.config.js'),
            '--roots',
            join(ROOT, 'test', 'fixtures', 'timed-out'),
            '--testRegex',
            '.*\\.fixture\\.ts$',
            '--runInBand',
          ],
          {
            cwd: ROOT,
            env: { PATH: process.env.PATH ?? '', LEFT_PID_FILE: pidFile },
            encoding: 'utf8',
            timeout: 50_000,
          },
        );
        // the fixture's test failed, by its timeout
        expect(run.status).toBe(1);
        expect(run.stderr).toMatch(/Exceeded timeout of 1000 ms/);
        const pid = Number(readFileSync(pidFile, 'utf8'));
        expect(pid).toBeGreaterThan(0);
        expect(isRunning(pid)).toBe(false);
      } finally {
        folder.remove();
      }
    },
    testLimit(60_000),
  );
});
