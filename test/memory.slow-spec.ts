import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  NEUTRAL_CWD,
  MAIN,
  ROOT,
  runCliProcess,
  startServiceProcess,
} from './helpers/service-process';
import { makeTempFolder } from './helpers/test-app';

/**
 * The memory docs/operations.md promises, measured: the service started as `npm run start:prod`
 * starts it, under mixed load on many connections, with and without tracing, peaks below the
 * figure the docs give, and that figure leaves room in the example Kubernetes limit.
 */
const operations = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
const documentedPeakMb = Number(
  /peaks\s+under\s+(\d+)\s+MB\s+under\s+load/.exec(operations)?.[1],
);
const exampleLimitMib = Number(
  /limits: \{ memory: (\d+)Mi \}/.exec(operations)?.[1],
);
interface LoadRequest {
  method: string;
  path?: string;
  headers: Record<string, string>;
  setupRequest?: (
    request: LoadRequest,
    context: { id?: number },
  ) => LoadRequest & { body?: string };
}
// eslint-disable-next-line @typescript-eslint/no-require-imports -- autocannon ships no types
const autocannon = require('autocannon') as (options: {
  url: string;
  connections: number;
  amount: number;
  requests: LoadRequest[];
}) => Promise<{
  errors: number;
  timeouts: number;
  non2xx: number;
  requests: { total: number };
}>;

/** Requests of the load, four per plant added, read, listed and deleted: 8 to 20 s here. */
const REQUESTS = 24_000;

/** node's options in start:prod, before dist/main.js: the heap cap among them. */
const startProdArgs = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    scripts: Record<string, string>;
  }
).scripts['start:prod']
  .split(' ')
  .filter((word) => word.startsWith('--'));

const rssMbOf = (pid: number) =>
  Number(
    /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1],
  ) / 1024;

describe('memory under load, as docs/operations.md gives it', () => {
  it('gives a peak, and a Kubernetes limit with a fifth to spare above it', () => {
    expect(documentedPeakMb).toBeGreaterThan(0);
    expect(exampleLimitMib).toBeGreaterThan(0);
    expect(startProdArgs).toContainEqual(
      expect.stringMatching(/^--max-old-space-size=\d+$/),
    );
    expect(documentedPeakMb).toBeLessThanOrEqual(
      0.8 * exampleLimitMib * 1.048576,
    );
  });

  it.each([
    ['without tracing', {}],
    [
      // spans to a port nothing listens on: exports fail, and their queue stays bounded
      'with tracing on',
      { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' },
    ],
  ])(
    '%s: 64 connections creating, reading, listing and deleting peak below it',
    async (_case, tracing: Record<string, string>) => {
      const folder = makeTempFolder();
      const env = {
        DATABASE_URL: `sqlite:${join(folder.path, 'store.sqlite')}`,
        RATE_LIMIT_PER_TOKEN: '1000000000',
        NODE_ENV: 'production',
        ...tracing,
      };
      const service = await startServiceProcess(
        env,
        NEUTRAL_CWD,
        MAIN,
        startProdArgs,
      );
      const token = (
        await runCliProcess(['tokens', 'create', '--name', 'memory'], env)
      ).lastLine;
      const pid = service.child.pid!;
      let peakMb = rssMbOf(pid);
      const sampler = setInterval(() => {
        peakMb = Math.max(peakMb, rssMbOf(pid));
      }, 250);
      try {
        const auth = { authorization: `Bearer ${token}` };
        let nextId = 0;
        const result = await autocannon({
          url: service.baseUrl,
          connections: 64,
          // a count, not a duration: a slow machine makes as many, more slowly
          amount: REQUESTS,
          requests: [
            {
              method: 'POST',
              path: '/plants',
              headers: { ...auth, 'content-type': 'application/json' },
              setupRequest: (request, context) => {
                context.id = nextId += 1;
                return {
                  ...request,
                  body: `{"id":${context.id},"name":"Measured Moss","tag":"memory"}`,
                };
              },
            },
            {
              method: 'GET',
              headers: auth,
              setupRequest: (request, context) => ({
                ...request,
                path: `/plants/${context.id}`,
              }),
            },
            {
              method: 'GET',
              path: '/plants?limit=50&tag=memory',
              headers: auth,
            },
            {
              method: 'DELETE',
              headers: auth,
              setupRequest: (request, context) => ({
                ...request,
                path: `/plants/${context.id}`,
              }),
            },
          ],
        });
        expect(
          await fetch(`${service.baseUrl}/plants?limit=1`, { headers: auth }),
        ).toHaveProperty('status', 200);
        expect(result.errors + result.timeouts + result.non2xx).toBe(0);
        expect(result.requests.total).toBe(REQUESTS);
        // the figure in the message, should it be over
        expect({ peakMb: Math.round(peakMb), under: documentedPeakMb }).toEqual(
          {
            peakMb: Math.min(Math.round(peakMb), documentedPeakMb),
            under: documentedPeakMb,
          },
        );
      } finally {
        clearInterval(sampler);
        service.child.kill('SIGTERM');
        await service.exited;
        folder.remove();
      }
    },
  );
});
