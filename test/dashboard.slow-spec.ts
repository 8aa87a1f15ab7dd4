import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import {
  ROOT,
  runCliProcess,
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';
import { describeWhenAvailable } from './helpers/external-service';
import { freePort } from './helpers/ports';
import { makeTempFolder } from './helpers/test-app';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver';

/** Debian's Prometheus 2.42 (package prometheus). */
const PROMETHEUS = process.env.PROMETHEUS_PATH ?? '/usr/bin/prometheus';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const DASHBOARD = join(ROOT, 'deploy', 'grafana', 'plant-store.json');
const ARTIFACTS = join(ROOT, 'test-artifacts');

interface Panel {
  title: string;
  type: string;
  gridPos: { x: number; y: number; w: number; h: number };
  targets: { expr: string; legendFormat?: string }[];
}
const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as {
  uid: string;
  panels: Panel[];
  templating: { list: { name: string; type: string }[] };
};

const exprs = dashboard.panels.flatMap((panel) =>
  panel.targets.map((target) => target.expr),
);

/** Grafana's variables, as Prometheus needs them spelt out: a scrape each second here. */
const asPrometheusQuery = (expr: string) =>
  expr.replaceAll('$__rate_interval', '10s');

describe('the Grafana dashboard (deploy/grafana/plant-store.json)', () => {
  const panelWith = (metric: string) =>
    dashboard.panels.filter((panel) =>
      panel.targets.some((target) => target.expr.includes(metric)),
    );

  it.each([
    [
      'request rate by route',
      /requests per second by route/i,
      /rate\(http_server_request_duration_seconds_count/,
    ],
    [
      'errors by route',
      /errors.*by route/i,
      /http_response_status_code=~"5\.\."/,
    ],
    [
      'p50 latency by route',
      /p50/i,
      /histogram_quantile\(0\.5, sum by \(le, http_route\)/,
    ],
    [
      'p99 latency by route',
      /p99 by route/i,
      /histogram_quantile\(0\.99, sum by \(le, http_route\)/,
    ],
    [
      'rate-limit rejections',
      /rate-limit rejections/i,
      /plant_store_rate_limit_rejections_total/,
    ],
    [
      'the outbox backlog',
      /outbox backlog/i,
      /plant_store_webhook_deliveries_pending/,
    ],
    [
      'the age of the oldest pending delivery',
      /oldest pending/i,
      /plant_store_webhook_oldest_pending_age_seconds/,
    ],
    ['process memory', /memory/i, /process_resident_memory_bytes/],
    [
      'webhook delivery lag',
      /delivery lag/i,
      /plant_store_webhook_lag_seconds/,
    ],
  ])('has a panel for %s', (_what, title, expr) => {
    const panel = dashboard.panels.find((each) => title.test(each.title));
    expect(panel).toBeDefined();
    expect(panel!.type).toBe('timeseries');
    expect(panel!.targets.some((target) => expr.test(target.expr))).toBe(true);
  });

  it('shows webhook delivery lag first: top left, the whole width', () => {
    const [first] = [...dashboard.panels].sort(
      (a, b) => a.gridPos.y - b.gridPos.y || a.gridPos.x - b.gridPos.x,
    );
    expect(first.title).toMatch(/delivery lag/i);
    expect(first.gridPos).toMatchObject({ x: 0, y: 0, w: 24 });
  });

  it('asks Prometheus through a data source variable, and names every series', () => {
    expect(dashboard.templating.list).toEqual([
      expect.objectContaining({ name: 'datasource', type: 'datasource' }),
    ]);
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) {
        expect(target.legendFormat).toEqual(expect.any(String));
      }
    }
    expect(
      panelWith('http_server_request_duration_seconds').length,
    ).toBeGreaterThanOrEqual(4);
    expect(new Set(exprs).size).toBe(exprs.length);
  });
});

/** Gauges every instance reads from the one database: the same number from each. */
const DATABASE_WIDE = [
  'plant_store_webhook_deliveries_pending',
  'plant_store_webhook_backlog_events',
  'plant_store_webhook_oldest_pending_age_seconds',
  'plant_store_webhook_lag_seconds',
  'plant_store_webhook_subscriptions',
];

describeWhenAvailable(
  existsSync(PROMETHEUS) && existsSync(CHROMIUM)
    ? undefined
    : `${PROMETHEUS} or ${CHROMIUM} is missing`,
  'apt-get install -y prometheus chromium',
  'every dashboard query, through a real Prometheus scraping the service under traffic',
  () => {
    let folder: ReturnType<typeof makeTempFolder>;
    let service: ServiceProcess;
    let receiver: WebhookReceiver;
    let prometheus: ChildProcess;
    let prometheusUrl: string;
    let prometheusOutput = '';

    /** A time before the service or Prometheus started: nothing had happened. */
    const beforeAnything = Date.now() / 1000 - 60;

    const query = async (expr: string, time?: string) => {
      const response = await fetch(
        `${prometheusUrl}/api/v1/query?${new URLSearchParams({
          query: expr,
          ...(time === undefined ? {} : { time }),
        }).toString()}`,
      );
      return (await response.json()) as {
        status: string;
        error?: string;
        data?: {
          result: { metric: Record<string, string>; value: [number, string] }[];
        };
      };
    };

    beforeAll(async () => {
      folder = makeTempFolder();
      receiver = await WebhookReceiver.start();
      const metricsPort = await freePort();
      const env = {
        DATABASE_URL: `sqlite:${join(folder.path, 'store.sqlite')}`,
        METRICS_PORT: String(metricsPort),
        RATE_LIMIT_PER_ADDRESS: '20',
        WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOKS_POLL_INTERVAL: '100ms',
      };
      service = await startServiceProcess(env);
      await runCliProcess(['webhooks', 'add', '--url', receiver.url], env);
      const token = (
        await runCliProcess(['tokens', 'create', '--name', 'dash'], env)
      ).lastLine;

      const prometheusPort = await freePort();
      prometheusUrl = `http://127.0.0.1:${prometheusPort}`;
      writeFileSync(
        join(folder.path, 'prometheus.yml'),
        [
          'global:',
          '  scrape_interval: 1s',
          'scrape_configs:',
          '  - job_name: plant-store',
          '    static_configs:',
          // the one service as two instances, which report the same database
          ...['a', 'b'].flatMap((replica) => [
            `      - targets: ['127.0.0.1:${metricsPort}']`,
            `        labels: { replica: ${replica} }`,
          ]),
          '',
        ].join('\n'),
      );
      prometheus = spawn(
        PROMETHEUS,
        [
          `--config.file=${join(folder.path, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(folder.path, 'tsdb')}`,
          `--web.listen-address=127.0.0.1:${prometheusPort}`,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      prometheus.stdout!.on(
        'data',
        (chunk: Buffer) => (prometheusOutput += chunk.toString()),
      );
      prometheus.stderr!.on(
        'data',
        (chunk: Buffer) => (prometheusOutput += chunk.toString()),
      );

      // ten seconds of a little traffic: creates (and so webhooks), reads, misses, refusals
      const headers = {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
      };
      const until = Date.now() + 10_000;
      for (let id = 1; Date.now() < until; id += 1) {
        await fetch(`${service.baseUrl}/plants`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ id, name: `Plant ${id}` }),
        });
        await fetch(`${service.baseUrl}/plants/${id}`, { headers });
        await fetch(`${service.baseUrl}/plants/${id + 1_000_000}`, { headers });
        // no token: 401s, then 429s once the address is over its limit
        await fetch(`${service.baseUrl}/plants/${id}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await eventually(
        () => query('count_over_time(up{job="plant-store"}[1m])'),
        (answer) => Number(answer.data?.result[0]?.value[1] ?? 0) >= 8,
        30_000,
      );
    }, 120_000);

    afterAll(async () => {
      prometheus?.kill('SIGTERM');
      service?.child.kill('SIGTERM');
      await service?.exited;
      await receiver?.close();
      folder?.remove();
    });

    it('scrapes the service', async () => {
      const up = await query('up{job="plant-store"}');
      expect(up.data?.result[0]?.value[1]).toBe('1');
    });

    it.each(
      dashboard.panels.flatMap((panel) =>
        panel.targets.map((target) => [panel.title, target.expr] as const),
      ),
    )('%s: %s parses and returns data', async (_title, expr) => {
      const answer = await query(asPrometheusQuery(expr));
      expect(answer.error).toBeUndefined();
      expect(answer.status).toBe('success');
      expect(answer.data!.result.length).toBeGreaterThan(0);
    });

    it('renders what each panel shows, as a picture (test-artifacts/dashboard.png)', async () => {
      const end = Date.now() / 1000;
      const charts: string[] = [];
      for (const panel of dashboard.panels) {
        const series: { name: string; points: [number, number][] }[] = [];
        for (const target of panel.targets) {
          const response = await fetch(
            `${prometheusUrl}/api/v1/query_range?${new URLSearchParams({
              query: asPrometheusQuery(target.expr),
              start: String(end - 14),
              end: String(end),
              step: '1',
            }).toString()}`,
          );
          const { data } = (await response.json()) as {
            data: {
              result: {
                metric: Record<string, string>;
                values: [number, string][];
              }[];
            };
          };
          for (const { metric, values } of data.result) {
            series.push({
              name: (target.legendFormat ?? '').replace(
                /\{\{(\w+)\}\}/g,
                (_, label: string) => metric[label] ?? '',
              ),
              points: values
                .map(
                  ([time, value]) => [time, Number(value)] as [number, number],
                )
                .filter(([, value]) => Number.isFinite(value)),
            });
          }
        }
        expect(series.length).toBeGreaterThan(0);
        charts.push(chart(panel.title, series, end - 14, end));
      }
      mkdirSync(ARTIFACTS, { recursive: true });
      const browser = await chromium.launch({ executablePath: CHROMIUM });
      try {
        const page = await browser.newPage({
          viewport: { width: 1200, height: 900 },
        });
        await page.setContent(
          `<html><body style="margin:0;background:#111217;font:12px sans-serif;color:#ccc">
         <div style="display:grid;grid-template-columns:1fr 1fr;gap:8px;padding:8px">${charts.join('')}</div>
         </body></html>`,
        );
        const file = join(ARTIFACTS, 'dashboard.png');
        await page.screenshot({ path: file, fullPage: true });
        expect(readFileSync(file).subarray(1, 4).toString()).toBe('PNG');
      } finally {
        await browser.close();
      }
    });

    it("adds each database-wide number once, however many instances report it: a panel shows one instance's", async () => {
      const perDatabase = DATABASE_WIDE.flatMap((metric) =>
        exprs
          .filter((expr) => expr.includes(metric))
          .map((expr) => ({ metric, expr })),
      );
      expect(perDatabase.length).toBeGreaterThanOrEqual(DATABASE_WIDE.length);
      // an instant both replicas have been scraped at
      const at = String(Date.now() / 1000 - 2);
      const values = async (expr: string) =>
        (await query(expr, at)).data!.result.map(({ metric, value }) => ({
          metric,
          value: value[1],
        }));
      let counted = 0;
      for (const { metric, expr } of perDatabase) {
        const shown = await values(expr);
        const oneInstance = await values(
          expr.replaceAll(metric, `${metric}{replica="a"}`),
        );
        expect({ expr, shown }).toEqual({ expr, shown: oneInstance });
        counted += shown.filter(({ value }) => Number(value) > 0).length;
      }
      // some of them not zero (a healthy receiver), so that a sum would show
      expect(counted).toBeGreaterThan(0);
    });

    it('shows 0, not "No data", for a rate while nothing has happened', async () => {
      const rates = exprs.filter(
        (expr) =>
          expr.includes('rate(') && !expr.startsWith('histogram_quantile'),
      );
      expect(rates.length).toBeGreaterThanOrEqual(6);
      for (const expr of rates) {
        const answer = await query(
          asPrometheusQuery(expr),
          String(beforeAnything),
        );
        expect({
          expr,
          values: answer.data!.result.map(({ value }) => value[1]),
        }).toEqual({
          expr,
          values: ['0'],
        });
      }
    });

    it('gave Prometheus nothing to complain of', () => {
      expect(prometheusOutput).not.toMatch(/level=error/);
    });
  },
);

const COLOURS = [
  '#73bf69',
  '#f2cc0c',
  '#5794f2',
  '#ff780a',
  '#b877d9',
  '#f2495c',
  '#37872d',
  '#8ab8ff',
];

/** One panel as an SVG line chart: the series of a query_range over [start, end]. */
function chart(
  title: string,
  series: { name: string; points: [number, number][] }[],
  start: number,
  end: number,
): string {
  const width = 580;
  const height = 200;
  const max = Math.max(
    1e-9,
    ...series.flatMap(({ points }) => points.map(([, value]) => value)),
  );
  const x = (time: number) =>
    ((time - start) / (end - start)) * (width - 20) + 10;
  const y = (value: number) => height - 30 - (value / max) * (height - 50);
  const lines = series
    .map(
      ({ points }, index) =>
        `<polyline fill="none" stroke="${COLOURS[index % COLOURS.length]}" stroke-width="1.5" points="${points
          .map(
            ([time, value]) => `${x(time).toFixed(1)},${y(value).toFixed(1)}`,
          )
          .join(' ')}"/>`,
    )
    .join('');
  const legend = series
    .slice(0, 6)
    .map(
      ({ name }, index) =>
        `<tspan fill="${COLOURS[index % COLOURS.length]}">■ ${escapeXml(name)}  </tspan>`,
    )
    .join('');
  return `<div style="background:#181b1f;border:1px solid #333;padding:6px">
    <div style="font-weight:bold;margin-bottom:4px">${escapeXml(title)} <span style="color:#888">(max ${max.toPrecision(3)})</span></div>
    <svg width="${width}" height="${height}">${lines}<text x="10" y="${height - 8}" font-size="10">${legend}</text></svg>
  </div>`;
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"]/g, (char) => `&#${char.charCodeAt(0)};`);
}
