import { join } from 'node:path';
import { WebhookLagWatch } from '../src/modules/webhooks/webhook-lag';
import { captureLoggedLines, linesOf } from './helpers/logged-lines';
import { createTestDatabase } from './helpers/postgres';
import { freePort } from './helpers/ports';
import {
  ENGINE,
  makeTempFolder,
  startTestApp,
  type TestApp,
} from './helpers/test-app';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver';

/** Every line the in-process apps of this file log, at info level. */
const logged = captureLoggedLines();

const lagLines = () => linesOf(logged, 'WebhookLagWatch');

describe(`a subscription that falls behind (${ENGINE})`, () => {
  let instances: TestApp[] = [];
  let cleanup: () => Promise<void> = () => Promise.resolve();
  let receiver: WebhookReceiver | undefined;

  afterEach(async () => {
    await receiver?.close();
    for (const instance of instances) await instance.close();
    instances = [];
    await cleanup();
  });

  /** Both instances look at every subscription, as their timers do, at once. */
  const checkBoth = () =>
    Promise.all(instances.map((each) => each.app.get(WebhookLagWatch).check()));

  it('is logged once of two instances when its oldest undelivered event passes WEBHOOKS_LAG_WARN, and once when it has caught up', async () => {
    let url: string;
    if (ENGINE === 'postgres') {
      const database = await createTestDatabase();
      url = database.url;
      cleanup = database.drop;
    } else {
      const folder = makeTempFolder();
      url = `sqlite:${join(folder.path, 'store.sqlite')}`;
      cleanup = () => Promise.resolve(folder.remove());
    }
    const env = {
      DATABASE_URL: url,
      LOG_LEVEL: 'info',
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOKS_LAG_WARN: '1s',
      WEBHOOKS_POLL_INTERVAL: '50ms',
      WEBHOOKS_RETRY_BASE: '50ms',
      WEBHOOKS_RETRY_MAX_DELAY: '100ms',
      WEBHOOKS_PAUSE: '200ms',
    };
    instances.push(await startTestApp({ env }));
    instances.push(await startTestApp({ env }));
    const [first] = instances;
    const manager = await first.issueToken({ scopes: ['webhooks:manage'] });
    // nothing listens on its port yet: each attempt is refused
    const port = await freePort();
    const subscribe = async (body: object) =>
      (
        (
          await first
            .http()
            .post('/webhooks/subscriptions')
            .set('Authorization', `Bearer ${manager}`)
            .send(body)
            .expect(201)
        ).body as { id: string }
      ).id;
    const lagging = await subscribe({
      url: `http://127.0.0.1:${port}/hooks/plants`,
    });
    // owed no event of the type written: never lagging, whatever its cursor
    const other = await subscribe({
      url: `http://127.0.0.1:${port}/hooks/deleted`,
      events: ['plant.deleted'],
    });
    const token = await first.issueToken();
    await first
      .http()
      .post('/plants')
      .set('Authorization', `Bearer ${token}`)
      .send({ id: 1, name: 'Fern' })
      .expect(200);

    await checkBoth();
    expect(lagLines()).toEqual([]);

    // past WEBHOOKS_LAG_WARN
    await new Promise((resolve) => setTimeout(resolve, 1_200));
    await checkBoth();
    await checkBoth();
    expect(lagLines()).toEqual([
      {
        level: 40,
        msg: expect.stringMatching(
          new RegExp(
            `^webhook subscription ${lagging} is lagging: its oldest undelivered event is \\d+ s old, past WEBHOOKS_LAG_WARN \\(1 s\\)$`,
          ),
        ) as string,
      },
    ]);
    expect(JSON.stringify(lagLines())).not.toContain(other);

    receiver = await WebhookReceiver.start(undefined, port);
    await receiver.waitFor(1);
    await eventually(
      () =>
        first.query<{ pending: number }>(
          `SELECT COUNT(*) AS "pending" FROM "webhook_deliveries" WHERE "status" = 'pending'`,
        ),
      (rows) => Number(rows[0].pending) === 0,
    );
    await checkBoth();
    await checkBoth();
    expect(lagLines().slice(1)).toEqual([
      {
        level: 30,
        msg: expect.stringMatching(
          new RegExp(
            `^webhook subscription ${lagging} caught up: its oldest undelivered event is 0 s old, after \\d+ s past WEBHOOKS_LAG_WARN$`,
          ),
        ) as string,
      },
    ]);
  });
});
