import { createConnection, type AddressInfo } from 'node:net';
import { DataSource } from 'typeorm';
import type { PortableDataSource } from '../src/platform/database/portable-data-source';
import {
  METRICS_MAX_CONNECTIONS,
  MetricsServer,
} from '../src/platform/metrics/metrics-server';
import { JobScheduler } from '../src/platform/jobs/job-scheduler';
import { WebhookDispatcher } from '../src/modules/webhooks/webhook-dispatcher.service';
import { SNAPSHOT_TTL_MS } from '../src/modules/webhooks/webhook-metrics.service';
import {
  parsePrometheusText,
  promtoolCheck,
  sampleValue,
  type Sample,
} from './helpers/prometheus-text';
import { startTestApp, type TestApp } from './helpers/test-app';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver';
import { paceOf, testLimit } from './helpers/pace';

const DURATION = 'http_server_request_duration_seconds_count';

describe('metrics on METRICS_PORT, scraped over HTTP after a known set of requests', () => {
  let testApp: TestApp;
  let receiver: WebhookReceiver;
  let metricsUrl: string;
  let samples: Sample[];
  let text: string;

  const scrape = async () => {
    const response = await fetch(metricsUrl);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe(
      'text/plain; version=0.0.4; charset=utf-8',
    );
    text = await response.text();
    samples = parsePrometheusText(text);
    return samples;
  };
  const value = (name: string, labels: Record<string, string> = {}) =>
    sampleValue(samples, name, labels);

  beforeAll(async () => {
    receiver = await WebhookReceiver.start((_request, response) =>
      response.writeHead(204).end(),
    );
    testApp = await startTestApp({
      env: {
        METRICS_PORT: '0',
        // four requests without a proven token are one too many
        RATE_LIMIT_PER_ADDRESS: '3',
        WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOKS_POLL_INTERVAL: '20ms',
      },
    });
    metricsUrl = `http://127.0.0.1:${testApp.app.get(MetricsServer).port()}/metrics`;

    const manager = await testApp.issueToken({ scopes: ['webhooks:manage'] });
    const plantsOnly = await testApp.issueToken({
      scopes: ['plants:read', 'plants:write'],
    });
    const bearer = `Bearer ${plantsOnly}`;
    const http = () => testApp.http();
    await http()
      .post('/webhooks/subscriptions')
      .set('Authorization', `Bearer ${manager}`)
      .send({ url: receiver.url })
      .expect(201);
    for (const id of [1, 2, 3]) {
      await http()
        .post('/plants')
        .set('Authorization', bearer)
        .send({ id, name: `Plant ${id}` })
        .expect(200);
    }
    await http()
      .post('/plants')
      .set('Authorization', bearer)
      .send({ id: 1, name: 'Again' })
      .expect(400);
    await http().get('/plants/1').set('Authorization', bearer).expect(200);
    await http().get('/plants/2').set('Authorization', bearer).expect(200);
    await http().get('/plants/99').set('Authorization', bearer).expect(404);
    await http().delete('/plants/3').set('Authorization', bearer).expect(204);
    await http().get('/nowhere').set('Authorization', bearer).expect(404);
    await http()
      .get('/webhooks/subscriptions')
      .set('Authorization', bearer)
      .expect(403);
    // charged to the address: three, then the fourth is over the limit
    await http()
      .get('/plants/1')
      .set('Authorization', 'Basic eDp5')
      .expect(401);
    await http().get('/plants/1').expect(401);
    await http()
      .get('/plants/1')
      .set('Authorization', `Bearer pst_${'x'.repeat(43)}`)
      .expect(401);
    await http().get('/plants/1').expect(429);

    // three added, one deleted: four deliveries, each recorded once it is answered
    await eventually(
      scrape,
      () =>
        value('plant_store_webhook_deliveries_total', {
          outcome: 'delivered',
        }) === 4,
      10_000,
    );
  });

  afterAll(async () => {
    await testApp.close();
    await receiver.close();
  });

  it('counts every request by method, route template and status, the refused ones included', () => {
    const counted = samples
      .filter((sample) => sample.name === DURATION)
      .map(({ labels, value }) => ({ ...labels, value }));
    expect(counted).toEqual(
      expect.arrayContaining([
        route('POST', '/webhooks/subscriptions', 201, 1),
        route('POST', '/plants', 200, 3),
        route('POST', '/plants', 400, 1),
        route('GET', '/plants/{id}', 200, 2),
        route('GET', '/plants/{id}', 404, 1),
        route('DELETE', '/plants/{id}', 204, 1),
        route('GET', 'unrouted', 404, 1),
        route('GET', '/webhooks/subscriptions', 403, 1),
        route('GET', '/plants/{id}', 401, 3),
        // refused before routing, and counted with the route it was for
        route('GET', '/plants/{id}', 429, 1),
      ]),
    );
    expect(counted).toHaveLength(10);
    expect(counted.reduce((sum, { value }) => sum + value, 0)).toBe(15);
    expect(value('http_server_active_requests')).toBe(0);
  });

  it('counts rate-limit rejections and authentication failures by reason', () => {
    expect(
      value('plant_store_rate_limit_rejections_total', { limit: 'address' }),
    ).toBe(1);
    expect(
      samples.filter(
        (sample) => sample.name === 'plant_store_rate_limit_rejections_total',
      ),
    ).toHaveLength(1);
    const failures = Object.fromEntries(
      samples
        .filter(
          (sample) =>
            sample.name === 'plant_store_authentication_failures_total',
        )
        .map(({ labels, value }) => [labels.reason, value]),
    );
    expect(failures).toEqual({
      not_bearer: 1,
      missing: 1,
      rejected: 1,
      insufficient_scope: 1,
    });
  });

  it('shows the outbox: attempts by result, the backlog and its age, receivers, rows kept', async () => {
    // no ANALYZE: the rows of a table PostgreSQL never analysed are counted too
    // the outbox's values are read once a while (SNAPSHOT_TTL_MS), and PostgreSQL's counts of
    // live rows reach its statistics up to a second after their commit: a later read has them
    await eventually(
      scrape,
      () =>
        value('plant_store_webhook_deliveries_pending') === 0 &&
        value('plant_store_table_rows', { table: 'events' }) === 4 &&
        value('plant_store_table_rows', { table: 'webhook_deliveries' }) === 4,
      SNAPSHOT_TTL_MS * 3,
    );
    expect(
      value('plant_store_webhook_attempts_total', { result: 'success' }),
    ).toBe(4);
    expect(
      samples.filter(
        (sample) => sample.name === 'plant_store_webhook_attempts_total',
      ),
    ).toHaveLength(1);
    expect(value('plant_store_webhook_deliveries_pending')).toBe(0);
    expect(value('plant_store_webhook_oldest_pending_age_seconds')).toBe(0);
    expect(value('plant_store_webhook_lag_seconds')).toBe(0);
    expect(
      value('plant_store_webhook_subscriptions', { state: 'healthy' }),
    ).toBe(1);
    expect(
      value('plant_store_webhook_subscriptions', { state: 'paused' }),
    ).toBe(0);
    expect(value('plant_store_table_rows', { table: 'events' })).toBe(4);
    expect(
      value('plant_store_table_rows', { table: 'webhook_deliveries' }),
    ).toBe(4);
    expect(value('plant_store_webhook_backlog_events')).toBe(0);
    expect(value('plant_store_database_up')).toBe(1);
    expect(
      value('plant_store_webhook_snapshot_age_seconds'),
    ).toBeLessThanOrEqual(SNAPSHOT_TTL_MS / 1000);
  });

  it('reads the outbox at a cost that does not grow with the tables, and scrapes within a while share one read', async () => {
    // the dispatcher's polls and the periodic jobs (retention, the sweep, the lag watch, which
    // wake on their ticks) stopped, so that every statement from here on is the scrape's
    await testApp.app.get(WebhookDispatcher).beforeApplicationShutdown();
    await testApp.app.get(JobScheduler).beforeApplicationShutdown();
    const dataSource = testApp.app.get<PortableDataSource>(DataSource);
    const statements: string[] = [];
    dataSource.statementWrappers.push((sql, run) => {
      statements.push(sql);
      return run();
    });
    try {
      // the next scrape after the snapshot's time reads it again
      await new Promise((resolve) => setTimeout(resolve, SNAPSHOT_TTL_MS));
      const before = statements.length;
      await scrape();
      const read = statements.slice(before);
      expect(read.length).toBeGreaterThan(0);
      // none reads a whole table: on SQLite each plan searches an index or a key, never scans
      const tables = /"?(events|webhook_deliveries)"?/;
      for (const sql of read.filter((text) => tables.test(text))) {
        // TypeORM's count() names its figure "cnt" and reads every row it counts
        expect(sql).not.toMatch(/ AS "cnt"/i);
        if (testApp.engine === 'sqlite') {
          const plan = testApp
            .openDatabase()
            .prepare(`EXPLAIN QUERY PLAN ${sql}`)
            .all(...Array<null>(sql.match(/\?/g)?.length ?? 0).fill(null)) as {
            detail: string;
          }[];
          expect(
            plan
              .map(({ detail }) => detail)
              .filter((detail) =>
                /^SCAN (events|webhook_deliveries)\b(?! USING)/.test(detail),
              ),
          ).toEqual([]);
        }
      }
      // within its time, a scrape reads nothing: none of the outbox's reads again (the
      // service's own background polls, such as the store fence's, may run meanwhile)
      const outboxReads = read.filter((text) => tables.test(text));
      expect(outboxReads.length).toBeGreaterThan(0);
      const shared = statements.length;
      await scrape();
      expect(
        statements.slice(shared).filter((text) => outboxReads.includes(text)),
      ).toEqual([]);
    } finally {
      dataSource.statementWrappers.pop();
    }
  });

  it('times database statements and counts the one that failed (the duplicate id)', () => {
    const system = testApp.engine === 'postgres' ? 'postgresql' : 'sqlite';
    expect(
      value('db_client_operation_duration_seconds_count', {
        db_system_name: system,
      }),
    ).toBeGreaterThan(10);
    expect(
      value('plant_store_database_query_errors_total', {
        db_system_name: system,
      }),
    ).toBe(1);
    // at most the scrape's own read of the outbox waits for a connection
    expect(value('db_client_connection_pending_requests')).toBeLessThanOrEqual(
      1,
    );
    if (testApp.engine === 'postgres') {
      expect(value('db_client_connections', { state: 'idle' })).toEqual(
        expect.any(Number),
      );
      expect(value('db_client_connections', { state: 'used' })).toEqual(
        expect.any(Number),
      );
    } else {
      expect(value('db_client_connections', { state: 'idle' })).toBe(undefined);
    }
  });

  it("carries Node's process metrics", () => {
    expect(value('process_cpu_user_seconds_total')).toBeGreaterThan(0);
    expect(value('nodejs_eventloop_lag_seconds')).toEqual(expect.any(Number));
  });

  it('is a scrape Prometheus reads: promtool finds no problem', () => {
    const checked = promtoolCheck(text);
    if (checked === undefined) {
      console.warn(
        'promtool not found: apt-get install -y prometheus to check',
      );
      return;
    }
    // prom-client names three of Node's gauges `..._total`, which promtool's lint dislikes
    const ours = checked.output
      .split('\n')
      .filter((line) => line !== '' && !/^nodejs_active_\w+_total /.test(line));
    expect(ours).toEqual([]);
  });

  it('serves nothing else there, and nothing of it on the API port', async () => {
    const other = await fetch(metricsUrl.replace('/metrics', '/plants'));
    expect(other.status).toBe(404);
    const token = await testApp.issueToken();
    await testApp
      .http()
      .get('/metrics')
      .set('Authorization', `Bearer ${token}`)
      .expect(404);
  });

  // last: its requests are over the address limit, and would change the counts above
  it('names a method no route takes _OTHER, so that clients cannot grow the scrape with methods', async () => {
    const methods = ['PROPFIND', 'MKCOL', 'LOCK', 'UNLOCK', 'SEARCH', 'PURGE'];
    const { port } = testApp.server.address() as AddressInfo;
    for (const method of methods) {
      const answer = await fetch(`http://127.0.0.1:${port}/plants/1`, {
        method,
      });
      await answer.arrayBuffer();
    }
    await scrape();
    const named = new Set(
      samples
        .filter((sample) => sample.name === DURATION)
        .map(({ labels }) => labels.http_request_method),
    );
    expect([...named].sort()).toEqual(['DELETE', 'GET', 'POST', '_OTHER']);
    expect(
      samples
        .filter(
          (sample) =>
            sample.name === DURATION &&
            sample.labels.http_request_method === '_OTHER',
        )
        .reduce((sum, { value }) => sum + value, 0),
    ).toBe(methods.length);
  });
});

describe('metrics on bad days', () => {
  it('answers a scrape while the database is away: the last values, their age, and the database down', async () => {
    const testApp = await startTestApp({ env: { METRICS_PORT: '0' } });
    try {
      const url = `http://127.0.0.1:${testApp.app.get(MetricsServer).port()}/metrics`;
      const scrape = async () => {
        const response = await fetch(url);
        expect(response.status).toBe(200);
        return parsePrometheusText(await response.text());
      };
      const healthy = await scrape();
      expect(sampleValue(healthy, 'plant_store_database_up')).toBe(1);
      const token = await testApp.issueToken();
      await testApp.app.get(DataSource).destroy();
      // the token check, before routing, cannot read the database
      await testApp
        .http()
        .get('/plants/1')
        .set('Authorization', `Bearer ${token}`)
        .expect(503);
      await new Promise((resolve) => setTimeout(resolve, SNAPSHOT_TTL_MS));
      const away = await scrape();
      expect(sampleValue(away, 'plant_store_database_up')).toBe(0);
      expect(
        sampleValue(away, 'plant_store_webhook_snapshot_age_seconds'),
      ).toBeGreaterThanOrEqual(SNAPSHOT_TTL_MS / 1000);
      expect(
        sampleValue(away, 'http_server_request_duration_seconds_count', {
          http_request_method: 'GET',
          http_route: '/plants/{id}',
          http_response_status_code: '503',
        }),
      ).toBe(1);
      // the requests counted meanwhile are still there to see
      expect(
        sampleValue(away, 'plant_store_webhook_subscriptions', {
          state: 'healthy',
        }),
      ).toBe(0);
    } finally {
      await testApp.close().catch(() => undefined);
    }
  });

  it(
    `holds ${METRICS_MAX_CONNECTIONS} connections at most, and lets go of one that sends nothing`,
    async () => {
      const testApp = await startTestApp({ env: { METRICS_PORT: '0' } });
      const port = testApp.app.get(MetricsServer).port()!;
      const pace = await paceOf(() =>
        fetch(`http://127.0.0.1:${port}/metrics`).then((answer) =>
          answer.text(),
        ),
      );
      const sockets = Array.from({ length: METRICS_MAX_CONNECTIONS + 8 }, () =>
        createConnection({ port, host: '127.0.0.1' }),
      );
      try {
        const closed = sockets.map(
          (socket) =>
            new Promise<number>((resolve) => {
              const opened = Date.now();
              socket.on('error', () => undefined);
              // read what the server says: an idle connection is either closed bare (its socket
              // timeout) or sent a 408 first (Node's request-timeout check), and a socket whose
              // data nobody reads never sees the end behind it
              socket.resume();
              socket.once('close', () => resolve(Date.now() - opened));
            }),
        );
        // those past the cap at once, the idle ones within the timeout and its check (margins
        // of 1 s and 10 s, and of 20 scrapes at this machine's pace); one still open then is
        // reported as such, not left to the test's limit
        const bound = 15_000 + 20 * pace;
        const lifetimes = await Promise.all(
          closed.map((lifetime) =>
            Promise.race([
              lifetime,
              new Promise<number>((resolve) =>
                setTimeout(() => resolve(Infinity), bound).unref(),
              ),
            ]),
          ),
        );
        expect(
          lifetimes.filter((ms) => ms < 1000 + 20 * pace).length,
        ).toBeGreaterThanOrEqual(8);
        expect(lifetimes.filter((ms) => ms >= bound)).toEqual([]);
      } finally {
        sockets.forEach((socket) => socket.destroy());
        await testApp.close();
      }
    },
    testLimit(30_000),
  );
});

describe('metrics without METRICS_PORT', () => {
  it('are not served at all', async () => {
    const testApp = await startTestApp();
    try {
      expect(testApp.app.get(MetricsServer).port()).toBeUndefined();
    } finally {
      await testApp.close();
    }
  });
});

function route(
  method: string,
  template: string,
  status: number,
  count: number,
) {
  return {
    http_request_method: method,
    http_route: template,
    http_response_status_code: String(status),
    value: count,
  };
}
