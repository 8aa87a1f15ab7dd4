import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
import { readAppConfig } from '../src/config/app.config';
import { readDatabaseConfig } from '../src/config/database.config';
import { ROOT } from './helpers/service-process';

// No Docker engine runs where these tests run: the files are checked for what they promise.

interface ComposeService {
  image?: string;
  build?: unknown;
  environment?: Record<string, string>;
  volumes?: string[];
  healthcheck?: { test?: string[] };
  depends_on?: Record<string, { condition?: string }>;
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
});

describe('Dockerfile', () => {
  const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');

  it('is multi-stage, with production dependencies only in the image', () => {
    expect(text.match(/^FROM /gm)).toHaveLength(2);
    expect(text).toMatch(/npm prune --omit=dev/);
    expect(text).toMatch(/^COPY --from=build \/app\/node_modules/m);
  });

  it('runs as a non-root user', () => {
    const users = text.match(/^USER (\S+)/gm) ?? [];
    expect(users.length).toBeGreaterThan(0);
    expect(users[users.length - 1]).not.toMatch(/^USER (root|0)$/);
  });

  it('checks health on /health/ready', () => {
    expect(text).toMatch(/^HEALTHCHECK [\s\S]*\/health\/ready/m);
  });

  it('builds and runs on Node 22, a supported LTS line that package.json names', () => {
    expect(text.match(/^FROM \S+/gm)).toEqual([
      'FROM node:22-bookworm-slim',
      'FROM node:22-bookworm-slim',
    ]);
    const { engines } = JSON.parse(
      readFileSync(join(ROOT, 'package.json'), 'utf8'),
    ) as { engines: { node: string } };
    expect(engines.node.split(' || ')).toEqual(
      expect.arrayContaining(['^20.19', '^22.12']),
    );
  });
});

describe("README's Kubernetes example", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const block = /^## Operating it[\s\S]*?```yaml\n([\s\S]*?)```/m.exec(readme);
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
