import { randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { packageVersion } from '../config/package-version';
import {
  describeDatabase,
  type DatabaseConfig,
} from '../config/database.config';
import { FENCE_POLL_MS } from '../database/store-fence.service';
import { schemaVersion, type TableSummary } from './archive-format';
import { BackupRefusal, openStore, storeEntries } from './backups';
import { checkTarget, intoTarget, load, migrate } from './restore';
import type { StoreConnection } from './store-connection';

/** How long the move waits for deliveries and job ticks under way to end, by default. */
export const MOVE_WAIT_MS = 60_000;

/** How often it looks again while they run. */
const WORK_LOOK_MS = 200;

export interface MoveReport {
  tables: Record<string, TableSummary>;
  migratedUp: string[];
  /** From the moment writes were refused to the moment the target held the store, checked. */
  writesRefusedMs: number;
  /** Of those, how long it waited for deliveries and job ticks under way to end. */
  waitedMs: number;
}

function sameDatabase(a: DatabaseConfig, b: DatabaseConfig): boolean {
  if (a.engine === 'sqlite' && b.engine === 'sqlite') {
    return resolve(a.sqlitePath) === resolve(b.sqlitePath);
  }
  return describeDatabase(a) === describeDatabase(b);
}

/**
 * Moves the store from `source` into the empty database `target` (docs/operations.md, "Moving
 * to PostgreSQL"), either engine to either:
 * 1. a move is recorded on the source: every instance there turns read-only within
 *    FENCE_POLL_MS (StoreFenceService), and stops taking jobs, handlers and deliveries;
 * 2. once they have had time to look, and the deliveries and job ticks they had under way
 *    have ended, triggers make every write to the source fail (the fence), in one barrier
 *    transaction, so that not even an instance that did not look can write;
 * 3. the source is read in one snapshot into the target, checked table by table;
 * 4. the move is recorded as done: the source's instances keep serving reads only.
 * Whatever fails, the fence is taken away and the source serves writes again.
 */
export async function move(
  source: DatabaseConfig,
  target: DatabaseConfig,
  { waitMs = MOVE_WAIT_MS }: { waitMs?: number } = {},
): Promise<MoveReport> {
  if (sameDatabase(source, target)) {
    throw new BackupRefusal(
      `--to names the database the store is in (${describeDatabase(source)}): name another`,
    );
  }
  // the source gets this release's schema, store_moves included, as any command gives it
  await migrate(source);
  const store = await openStore(source, 'move');
  const id = randomUUID();
  let recorded = false;
  try {
    const migrations = (await store.migrations()) ?? [];
    const from = {
      schema: schemaVersion(migrations),
      migrations,
      service: packageVersion(),
    };
    const fencedTables = (await store.tables()).map(({ table }) => table);
    // refused before anything is fenced; checked again when it is filled
    await checkTarget(target, from, { replace: false, purpose: 'move' });
    const started = performance.now();
    await store.run(
      'INSERT INTO "store_moves" ("id", "target", "started_at") VALUES (?, ?, {now})',
      [id, describeDatabase(target)],
    );
    recorded = true;
    // every instance looks every FENCE_POLL_MS: after two, each has turned read-only
    await new Promise((done) => setTimeout(done, 2 * FENCE_POLL_MS + 100));
    const waitStarted = performance.now();
    await fenceOnceIdle(store, fencedTables, id, waitMs);
    const waitedMs = performance.now() - waitStarted;
    await store.beginSnapshot();
    let tables: Record<string, TableSummary> = {};
    const migratedUp = await intoTarget(
      target,
      from,
      { replace: false, purpose: 'move' },
      async () => {
        tables = await load(target, storeEntries(store), from.service);
      },
    );
    await store.rollback();
    await store.run(
      `UPDATE "store_moves" SET "ended_at" = {now}, "outcome" = 'moved' WHERE "id" = ?`,
      [id],
    );
    return {
      tables,
      migratedUp,
      writesRefusedMs: performance.now() - started,
      waitedMs,
    };
  } catch (error) {
    if (recorded) await abandon(store, id);
    throw error;
  } finally {
    await store.close();
  }
}

/**
 * Fences the source once no delivery or job tick is under way, in a barrier that holds off
 * every write meanwhile: a delivery claimed after the look would otherwise be sent from the
 * source and again, after the move, from the target.
 */
async function fenceOnceIdle(
  store: StoreConnection,
  tables: readonly string[],
  id: string,
  waitMs: number,
): Promise<void> {
  const deadline = performance.now() + waitMs;
  for (;;) {
    await store.beginBarrier();
    const underWay = await store.workUnderWay();
    if (underWay === 0) {
      await store.fence(tables);
      await store.run(
        'UPDATE "store_moves" SET "fenced_at" = {now} WHERE "id" = ?',
        [id],
      );
      await store.commit();
      return;
    }
    await store.rollback();
    if (performance.now() > deadline) {
      throw new BackupRefusal(
        `${underWay} webhook deliveries or job ticks were still under way after ${Math.round(waitMs / 1000)} s (--wait): the move was abandoned and the source serves writes again; try again, or give --wait longer`,
      );
    }
    await new Promise((done) => setTimeout(done, WORK_LOOK_MS));
  }
}

/** Takes the fence away and records the move abandoned: the source serves writes again. */
async function abandon(store: StoreConnection, id: string): Promise<void> {
  await store.rollback().catch(() => undefined);
  await store.unfence();
  await store.run(
    `UPDATE "store_moves" SET "ended_at" = {now}, "outcome" = 'abandoned' WHERE "id" = ?`,
    [id],
  );
}
