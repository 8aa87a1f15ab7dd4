import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  runCliProcess,
  startServiceProcess,
  type ServiceProcess,
} from './helpers/service-process';
import { makeTempFolder } from './helpers/test-app';
import { eventually, WebhookReceiver } from './helpers/webhook-receiver';

/** A span as OTLP/HTTP's JSON encoding carries it, with its resource's service name. */
interface ExportedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  service: unknown;
}

const SERVER = 2;
const CLIENT = 3;

interface OtlpAttribute {
  key: string;
  value: Record<string, unknown>;
}

const attributesOf = (list: OtlpAttribute[] = []) =>
  Object.fromEntries(
    list.map(({ key, value }) => [key, Object.values(value)[0]]),
  );

/** An OTLP/HTTP receiver on loopback: what a collector would get, span by span. */
async function startCollector() {
  const spans: ExportedSpan[] = [];
  const server: Server = createServer((request, response) => {
    let body = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (body += chunk));
    request.on('end', () => {
      if (request.url === '/v1/traces') {
        const { resourceSpans = [] } = JSON.parse(body) as {
          resourceSpans?: {
            resource: { attributes: OtlpAttribute[] };
            scopeSpans: { spans: (ExportedSpan & { attributes: [] })[] }[];
          }[];
        };
        for (const { resource, scopeSpans } of resourceSpans) {
          const service = attributesOf(resource.attributes)['service.name'];
          for (const { spans: exported } of scopeSpans) {
            for (const span of exported) {
              spans.push({
                ...span,
                parentSpanId: span.parentSpanId || undefined,
                attributes: attributesOf(span.attributes),
                service,
              });
            }
          }
        }
      }
      response.writeHead(200, { 'Content-Type': 'application/json' });
      response.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

describe('traces over OTLP/HTTP, with the OpenTelemetry variables set', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let receiver: WebhookReceiver;
  let folder: ReturnType<typeof makeTempFolder>;
  let service: ServiceProcess;
  let token: string;
  const trace = randomBytes(16).toString('hex');
  const caller = randomBytes(8).toString('hex');

  beforeAll(async () => {
    collector = await startCollector();
    receiver = await WebhookReceiver.start();
    folder = makeTempFolder();
    const env = {
      DATABASE_URL: `sqlite:${join(folder.path, 'store.sqlite')}`,
      LOG_LEVEL: 'info',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_SERVICE_NAME: 'plant-store-under-test',
      OTEL_BSP_SCHEDULE_DELAY: '50',
      WEBHOOKS_ALLOW_PRIVATE_NETWORKS: 'true',
      WEBHOOKS_POLL_INTERVAL: '50ms',
    };
    service = await startServiceProcess(env);
    token = (await runCliProcess(['tokens', 'create', '--name', 'traced'], env))
      .lastLine;
    expect(
      (await runCliProcess(['webhooks', 'add', '--url', receiver.url], env))
        .status,
    ).toBe(0);
    const created = await fetch(`${service.baseUrl}/plants`, {
      method: 'POST',
      headers: {
        Authorization: `Bearer ${token}`,
        'Content-Type': 'application/json',
        'X-Request-Id': 'traced-create',
        traceparent: `00-${trace}-${caller}-01`,
      },
      body: '{"id": 7, "name": "Traced"}',
    });
    expect(created.status).toBe(200);
    await receiver.waitFor(1);
    await eventually(
      () => collector.spans,
      (spans) =>
        spans.some((span) => span.name === 'webhook attempt') &&
        spans.some((span) => span.traceId === trace && span.kind === SERVER),
      10_000,
    );
  });

  afterAll(async () => {
    service.child.kill('SIGTERM');
    await service.exited;
    await collector.close();
    await receiver.close();
    folder.remove();
  });

  const inTrace = () =>
    collector.spans.filter((span) => span.traceId === trace);
  const serverSpan = () =>
    inTrace().find(
      (span) => span.kind === SERVER && span.parentSpanId === caller,
    );
  /** Whether `span` descends from the span `ancestorId`, through the spans exported. */
  const descends = (span: ExportedSpan, ancestorId: string): boolean => {
    const byId = new Map(inTrace().map((each) => [each.spanId, each]));
    for (let parent = span.parentSpanId; parent; ) {
      if (parent === ancestorId) return true;
      parent = byId.get(parent)?.parentSpanId;
    }
    return false;
  };

  it("continues the caller's trace: the request's span is a child of its traceparent", () => {
    expect(serverSpan()).toMatchObject({
      name: 'POST /plants',
      service: 'plant-store-under-test',
      attributes: expect.objectContaining({
        'http.route': '/plants',
        'http.response.status_code': 200,
      }),
    });
  });

  it('has a span for the route that answered, under the request', () => {
    const route = inTrace().find((span) =>
      span.name.startsWith('request handler'),
    );
    expect(route).toBeDefined();
    expect(route!.parentSpanId).toBe(serverSpan()!.spanId);
    expect(route).toMatchObject({
      name: 'request handler',
      attributes: expect.objectContaining({ 'http.route': '/plants' }),
    });
  });

  it('has a span for each database statement, under the request', () => {
    const statements = inTrace().filter(
      (span) => span.attributes['db.system.name'] === 'sqlite',
    );
    expect(statements.map((span) => span.name)).toEqual(
      expect.arrayContaining(['INSERT']),
    );
    for (const statement of statements) {
      expect(statement.kind).toBe(CLIENT);
      expect(descends(statement, serverSpan()!.spanId)).toBe(true);
      expect(statement.attributes['db.query.text']).not.toContain('Traced');
    }
  });

  it("sends traceparent with the webhook, from the attempt's span and its request", () => {
    const [webhook] = receiver.received;
    const [, traceId, parentId] =
      /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(
        String(webhook.headers.traceparent),
      ) ?? [];
    const attempt = collector.spans.find(
      (span) => span.name === 'webhook attempt',
    );
    expect(attempt).toMatchObject({
      traceId,
      attributes: expect.objectContaining({
        'webhook.id': webhook.headers['webhook-id'],
        'webhook.event_type': 'plant.added',
        'webhook.attempt': 1,
        'webhook.result': 'success',
      }),
    });
    const request = collector.spans.find((span) => span.spanId === parentId);
    expect(request).toMatchObject({
      kind: CLIENT,
      traceId,
      parentSpanId: attempt!.spanId,
    });
  });

  it('writes the trace id in the log lines of the request', async () => {
    const line = await eventually(
      () => service.lines().find((each) => each.reqId === 'traced-create'),
      (found) => found !== undefined,
      5000,
    );
    expect(line).toMatchObject({
      trace_id: trace,
      span_id: serverSpan()!.spanId,
    });
  });

  it("exports no span of the dispatcher's polls: every statement's span is under a request or an attempt", async () => {
    // twenty polls at least, since the service started
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const statements = collector.spans.filter(
      (span) => span.attributes['db.system.name'] !== undefined,
    );
    expect(statements.length).toBeGreaterThan(0);
    expect(
      statements.filter((span) => span.parentSpanId === undefined),
    ).toEqual([]);
  });

  it("traces no health probe (startServiceProcess's readiness polls)", () => {
    // the request spans name their path here: a probe's span would show
    expect(serverSpan()!.attributes['url.path']).toBe('/plants');
    const paths = collector.spans.map((span) => span.attributes['url.path']);
    expect(
      paths.filter(
        (path) => typeof path === 'string' && path.startsWith('/health'),
      ),
    ).toEqual([]);
  });
});

describe('traces as TRACES_BACKGROUND and the sampler ask, whatever callers send', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let folder: ReturnType<typeof makeTempFolder>;

  beforeEach(async () => {
    collector = await startCollector();
    folder = makeTempFolder();
  });

  afterEach(async () => {
    await collector.close();
    folder.remove();
  });

  const start = (env: Record<string, string>) =>
    startServiceProcess({
      DATABASE_URL: `sqlite:${join(folder.path, 'store.sqlite')}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_BSP_SCHEDULE_DELAY: '50',
      WEBHOOKS_POLL_INTERVAL: '50ms',
      ...env,
    });
  const stop = async (service: ServiceProcess) => {
    service.child.kill('SIGTERM');
    await service.exited;
  };

  it("gives the dispatcher's polls root spans when TRACES_BACKGROUND asks", async () => {
    const service = await start({ TRACES_BACKGROUND: 'true' });
    try {
      await eventually(
        () =>
          collector.spans.filter(
            (span) => span.name === 'SELECT' && span.parentSpanId === undefined,
          ),
        (roots) => roots.length >= 3,
        10_000,
      );
    } finally {
      await stop(service);
    }
  });

  it('traces no more than its ratio though every caller sends a sampled traceparent; TRACES_FOLLOW_CALLERS follows them', async () => {
    for (const [follow, traced] of [
      ['false', 0],
      ['true', 5],
    ] as const) {
      const service = await start({
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0',
        TRACES_FOLLOW_CALLERS: follow,
      });
      const traces = Array.from({ length: 5 }, () =>
        randomBytes(16).toString('hex'),
      );
      try {
        for (const trace of traces) {
          const response = await fetch(`${service.baseUrl}/openapi.json`, {
            headers: {
              traceparent: `00-${trace}-${randomBytes(8).toString('hex')}-01`,
            },
          });
          expect(response.status).toBe(200);
        }
      } finally {
        // exported, if at all, by the time it has stopped
        await stop(service);
      }
      const serverSpans = collector.spans.filter(
        (span) => span.kind === SERVER && traces.includes(span.traceId),
      );
      expect({ follow, traced: serverSpans.length }).toEqual({
        follow,
        traced,
      });
    }
  });
});
