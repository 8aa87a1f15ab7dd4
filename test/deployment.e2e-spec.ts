import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';
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
});
