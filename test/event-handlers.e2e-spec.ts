import { DataSource } from 'typeorm';
import { SqlHandlerStore } from '../src/platform/events/event-handlers.service';
import { SkippedEventsService } from '../src/platform/events/skipped-events.service';
import { PlantRemovals } from './fixtures/reactions/plant-removals';
import { ReactionsFixtureModule } from './fixtures/reactions/reactions.module';
import {
  startFixtureProcesses,
  type FixtureProcess,
} from './helpers/fixture-process';
import { consumedTypes } from './helpers/event-consumers';
import { testLimit } from './helpers/pace';
import {
  databaseForProcesses,
  databaseReader,
  ENGINE,
  startTestApp,
  type TestApp,
} from './helpers/test-app';
import { eventually } from './helpers/webhook-receiver';

interface Removal {
  plant_id: bigint;
  seq: bigint;
  instance: bigint | number;
}

// A module reacting to another's events, in the service, from the event log
// (docs/decisions.md, "Reacting to events"), through test/fixtures/reactions: it records
// each deleted plant.
describe(`event handlers (${ENGINE})`, () => {
  describe('in one instance', () => {
    let testApp: TestApp;
    let token: string;

    beforeAll(async () => {
      // no webhook subscription: the handler alone wants plant.deleted
      testApp = await startTestApp({ imports: [ReactionsFixtureModule] });
      token = await testApp.issueToken();
    });

    afterAll(() => testApp.close());

    const addAndDelete = async (id: number, name: string) => {
      await testApp
        .http()
        .post('/plants')
        .set('Authorization', `Bearer ${token}`)
        .send({ id, name })
        .expect(200);
      await testApp
        .http()
        .delete(`/plants/${id}`)
        .set('Authorization', `Bearer ${token}`)
        .expect(204);
    };
    const removals = () =>
      testApp.query<Removal>(
        'SELECT plant_id, seq, instance FROM fixture_removed_plants ORDER BY seq',
      );

    it('handles each event of its types once, in the order of the log', async () => {
      for (const id of [5, 3, 9]) await addAndDelete(id, `plant ${id}`);
      const rows = await eventually(
        removals,
        (found) => found.length >= 3,
        testLimit(10_000),
      );
      expect(rows.map(({ plant_id }) => Number(plant_id))).toEqual([5, 3, 9]);
      // written for the handler, and only the types some consumer wants: no plant.added, unless
      // another module of the app reacts to it
      const types = await testApp.query<{ type: string }>(
        'SELECT DISTINCT type FROM events ORDER BY type',
      );
      const consumed = await consumedTypes(testApp, [
        'plant.added',
        'plant.deleted',
      ]);
      expect(consumed).toContain('plant.deleted');
      expect(types.map(({ type }) => type)).toEqual(consumed);
      const [state] = await testApp.query<{ cursor: bigint }>(
        "SELECT cursor FROM event_handlers WHERE name = 'fixture.plant-removals'",
      );
      expect(BigInt(state.cursor)).toBe(BigInt(rows[2].seq));
    });

    it('rolls a failed attempt back with its writes, and tries the event again before the ones after it', async () => {
      const before = (await removals()).length;
      await addAndDelete(11, 'fail-once');
      await addAndDelete(12, 'after it');
      const rows = await eventually(
        removals,
        (found) => found.length >= before + 2,
        testLimit(15_000),
      );
      // one row for the plant that failed once (its first attempt's row rolled back), then the next
      expect(
        rows.slice(before).map(({ plant_id }) => Number(plant_id)),
      ).toEqual([11, 12]);
      const [state] = await testApp.query<{
        failures: bigint | number;
        last_error: string | null;
      }>(
        "SELECT failures, last_error FROM event_handlers WHERE name = 'fixture.plant-removals'",
      );
      expect(Number(state.failures)).toBe(0);
      expect(state.last_error).toBeNull();
    });

    it('skips an event that keeps failing after its attempts, handles the ones after it, and handles it on a retry once fixed', async () => {
      const before = (await removals()).length;
      await addAndDelete(21, 'poison');
      await addAndDelete(22, 'after the poison');
      const rows = await eventually(
        removals,
        (found) => found.some(({ plant_id }) => Number(plant_id) === 22),
        testLimit(15_000),
      );
      // its three attempts rolled back with their writes; the next event was handled
      expect(
        rows.slice(before).map(({ plant_id }) => Number(plant_id)),
      ).toEqual([22]);
      const [skipped] = await testApp.query<{
        handler: string;
        type: string;
        attempts: bigint | number;
        last_error: string;
        retry_requested_at: unknown;
      }>(
        'SELECT handler, type, attempts, last_error, retry_requested_at FROM event_handler_skips',
      );
      expect({ ...skipped, attempts: Number(skipped.attempts) }).toEqual({
        handler: 'fixture.plant-removals',
        type: 'plant.deleted',
        attempts: 3,
        last_error: 'the fixture cannot take a plant named poison',
        retry_requested_at: null,
      });
      // the bug fixed, an operator asks for a retry (what `events retry` does)
      PlantRemovals.healed = true;
      const skippedEvents = testApp.app.get(SkippedEventsService);
      expect(await skippedEvents.requestRetry('fixture.plant-removals')).toBe(
        1,
      );
      const handled = await eventually(
        removals,
        (found) => found.some(({ plant_id }) => Number(plant_id) === 21),
        testLimit(15_000),
      );
      // in the order of the log, where the retried event keeps its place
      expect(
        handled.slice(before).map(({ plant_id }) => Number(plant_id)),
      ).toEqual([21, 22]);
      expect(await skippedEvents.list(10)).toEqual([]);
    });

    it('never handles an event the cursor has passed, whoever holds the lease: its writes roll back', async () => {
      const store = new SqlHandlerStore(testApp.app.get(DataSource));
      const name = 'fixture.cursor-guard';
      const now = new Date();
      await store.declare(name, ['plant.deleted'], now);
      const at = (await store.row(name))!.cursor;
      expect(await store.claim(name, 'guard', now, 30_000)).toBe(true);
      const marker = (plantId: bigint) => async () => {
        await testApp.app
          .get(DataSource)
          .query(
            `INSERT INTO fixture_removed_plants (plant_id, seq, instance) VALUES (${plantId}, 0, 0)`,
          );
      };
      // an instance that read the row before another moved the cursor tries an old event
      expect(await store.handleOne(name, 'guard', at, marker(-1n))).toBe(false);
      expect(await store.handleOne(name, 'guard', at + 1n, marker(-2n))).toBe(
        true,
      );
      const written = await testApp.query<{ plant_id: bigint }>(
        'SELECT plant_id FROM fixture_removed_plants WHERE plant_id < 0',
      );
      expect(written.map(({ plant_id }) => Number(plant_id))).toEqual([-2]);
      await store.release(name, 'guard');
    });
  });

  describe('across two instances', () => {
    let instances: FixtureProcess[] = [];
    let stop: () => Promise<void>;
    let database: ReturnType<typeof databaseReader>;
    let drop: () => Promise<void>;

    beforeAll(async () => {
      const shared = await databaseForProcesses();
      database = shared.reader;
      drop = shared.drop;
      ({ instances, stop } = await startFixtureProcesses('reactions', 2, {
        DATABASE_URL: shared.url,
        LOG_LEVEL: 'warn',
      }));
    });

    afterAll(async () => {
      await stop?.();
      await drop?.();
    });

    it('handles each event once, whichever instance takes it, with deletes sent to both', async () => {
      const ids = Array.from({ length: 40 }, (_, index) => 100 + index);
      await Promise.all(
        ids.map(async (id, index) => {
          const instance = instances[index % 2];
          const headers = {
            Authorization: `Bearer ${instance.token}`,
            'Content-Type': 'application/json',
          };
          const added = await fetch(`${instance.baseUrl}/plants`, {
            method: 'POST',
            headers,
            body: JSON.stringify({ id, name: `plant ${id}` }),
          });
          expect(added.status).toBe(200);
          const deleted = await fetch(`${instance.baseUrl}/plants/${id}`, {
            method: 'DELETE',
            headers,
          });
          expect(deleted.status).toBe(204);
        }),
      );
      const rows = await eventually(
        () =>
          database.query<Removal>(
            'SELECT plant_id, seq, instance FROM fixture_removed_plants ORDER BY seq',
            [],
          ),
        (found) => found.length >= ids.length,
        testLimit(20_000),
      );
      expect(rows.map(({ plant_id }) => Number(plant_id)).sort()).toEqual(ids);
      const seqs = rows.map(({ seq }) => BigInt(seq));
      expect(new Set(seqs).size).toBe(ids.length);
      for (const instance of instances) {
        expect(
          instance
            .lines()
            .filter(
              (line) => line.context === 'EventHandlers' && line.level >= 40,
            ),
        ).toEqual([]);
      }
    });
  });
});
