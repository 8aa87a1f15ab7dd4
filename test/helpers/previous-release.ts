import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './service-process';

/** Where the release that runs beside this build is recorded (docs/operations.md, "Upgrades"). */
export const PREVIOUS_RELEASE_FILE = join(
  ROOT,
  'deploy',
  'previous-release.json',
);

export interface PreviousRelease {
  commit: string;
  /** Its `dist/main.js` and `dist/cli.js`, built from its own sources. */
  main: string;
  cli: string;
  /** Removes the folder it was built in. */
  remove: () => void;
}

export function previousReleaseCommit(): string {
  const { commit } = JSON.parse(
    readFileSync(PREVIOUS_RELEASE_FILE, 'utf8'),
  ) as {
    commit: unknown;
  };
  if (typeof commit !== 'string' || !/^[0-9a-f]{40}$/.test(commit)) {
    throw new Error(
      `${PREVIOUS_RELEASE_FILE}: "commit" must be a full 40-digit commit id, got ${JSON.stringify(commit)}`,
    );
  }
  return commit;
}

/**
 * The previous release, built as its own sources say, in a folder of this run's own: its files
 * from git (`git archive`), this checkout's node_modules when its lock file is the same (else a
 * `npm ci` of its own), and its own `nest build`.
 */
export function buildPreviousRelease(): PreviousRelease {
  const commit = previousReleaseCommit();
  try {
    execFileSync('git', ['cat-file', '-e', `${commit}^{commit}`], {
      cwd: ROOT,
      stdio: 'ignore',
    });
  } catch {
    throw new Error(
      `the previous release ${commit} (deploy/previous-release.json) is not in this clone's history: fetch it (git fetch --unshallow), or record a commit that is`,
    );
  }
  const folder = mkdtempSync(join(tmpdir(), 'plant-store-previous-'));
  const remove = () => rmSync(folder, { recursive: true, force: true });
  try {
    execFileSync(
      'sh',
      ['-c', `git archive ${commit} | tar -x -C "${folder}"`],
      {
        cwd: ROOT,
      },
    );
    const sameLock =
      readFileSync(join(folder, 'package-lock.json'), 'utf8') ===
      readFileSync(join(ROOT, 'package-lock.json'), 'utf8');
    if (sameLock) {
      symlinkSync(join(ROOT, 'node_modules'), join(folder, 'node_modules'));
    } else {
      execFileSync(
        'npm',
        ['ci', '--no-audit', '--no-fund', '--prefer-offline'],
        {
          cwd: folder,
          stdio: 'inherit',
        },
      );
    }
    execFileSync(join(folder, 'node_modules', '.bin', 'nest'), ['build'], {
      cwd: folder,
      stdio: 'inherit',
    });
  } catch (error) {
    remove();
    throw error;
  }
  return {
    commit,
    main: join(folder, 'dist', 'main.js'),
    cli: join(folder, 'dist', 'cli.js'),
    remove,
  };
}
