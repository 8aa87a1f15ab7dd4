import { spawnSync } from 'node:child_process';
import {
  closeSync,
  mkdtempSync,
  openSync,
  rmSync,
  statfsSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A real filesystem of `size` (tmpfs), of this test's own, that a test can fill and empty. */
export interface SmallFilesystem {
  path: string;
  /** Bytes free now. */
  free(): number;
  /** Fills it up to `leaveBytes` free with a file of its own. */
  fill(leaveBytes?: number): void;
  /** Removes what `fill` wrote: the space comes back. */
  empty(): void;
  /** Unmounts it and removes its folder. */
  remove(): void;
}

/**
 * Mounts a tmpfs of `size` (`4m`) on a new folder: a disk that fills for real, as SQLite meets
 * it (ENOSPC on a write, at a commit or a checkpoint). Mounting takes root: the reason it
 * cannot be had otherwise, as a string.
 */
export function mountSmallFilesystem(size: string): SmallFilesystem | string {
  const path = mkdtempSync(join(tmpdir(), 'plant-store-small-fs-'));
  const mounted = spawnSync(
    'mount',
    ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', path],
    { encoding: 'utf8', timeout: 10_000 },
  );
  if (mounted.status !== 0) {
    rmSync(path, { recursive: true, force: true });
    return `mount -t tmpfs failed (it needs root): ${mounted.stderr.trim() || mounted.error?.message || `exit ${mounted.status}`}`;
  }
  const filler = join(path, 'filler');
  const free = () => {
    const stats = statfsSync(path);
    return stats.bavail * stats.bsize;
  };
  return {
    path,
    free,
    fill(leaveBytes = 0) {
      const fd = openSync(filler, 'a');
      const chunk = Buffer.alloc(64 * 1024, 1);
      try {
        for (let left = free() - leaveBytes; left > 0; ) {
          const size = Math.min(chunk.length, left);
          try {
            left -= writeSync(fd, chunk, 0, size);
          } catch (error) {
            if ((error as NodeJS.ErrnoException).code === 'ENOSPC') return;
            throw error;
          }
        }
      } finally {
        closeSync(fd);
      }
    },
    empty() {
      rmSync(filler, { force: true });
    },
    remove() {
      spawnSync('umount', ['-l', path], { timeout: 10_000 });
      rmSync(path, { recursive: true, force: true });
    },
  };
}
