import type { NestExpressApplication } from '@nestjs/platform-express';
import Database from 'better-sqlite3';
import { Pool, types } from 'pg';
import { createTestDatabase } from './postgres';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { ScopeCatalogue, type Scope } from '../../src/platform/auth/scopes';
import { TokensService } from '../../src/platform/auth/tokens.service';
import {
  appConfig,
  type AppConfig,
} from '../../src/platform/config/app.config';
import { buildOpenApiDocument } from '../../src/openapi/openapi-document';
import { openApiJson } from '../../src/openapi/openapi-text';
import { createApp, type CreateAppOptions } from '../../src/setup-app';
import { recordResponse, useResponseContract } from './response-contract';
import type { Doc } from './openapi-contract';

export interface TestApp {
  app: NestExpressApplication;
  server: Server;
  databaseFile: string;
  /** A fresh supertest request against the running app. */
  http: () => ReturnType<typeof request>;
  issueToken: (options?: {
    scopes?: Scope[];
    expiresAt?: Date;
  }) => Promise<string>;
  /** Which database this app runs on: TEST_ENGINE, set by the e2e-postgres jest project. */
  engine: Engine;
  /**
   * Reads the app's database over a second, independent connection, whichever the engine:
   * `?` placeholders, integer columns as exact bigints.
   */
  query: <T = Record<string, unknown>>(
    sql: string,
    ...parameters: unknown[]
  ) => Promise<T[]>;
  /** A second connection to the SQLite file, for tests of SQLite itself. */
  openDatabase: () => Database.Database;
  close: () => Promise<void>;
}

export type Engine = 'sqlite' | 'postgres';

export const ENGINE: Engine =
  process.env.TEST_ENGINE === 'postgres' ? 'postgres' : 'sqlite';

/** A time as `databaseReader` reads it, in ms since the epoch: a Date (pg), or SQLite's UTC text. */
export function storedTime(value: unknown): number {
  if (value instanceof Date) return value.getTime();
  return Date.parse(`${String(value).replace(' ', 'T')}Z`);
}

/**
 * A reader of the database: better-sqlite3 with safe integers, or pg with int8 as bigint.
 * `writable` lets a test write too (SQLite's reader is read-only otherwise).
 */
export function databaseReader(
  engine: Engine,
  location: string,
  { writable = false } = {},
) {
  if (engine === 'sqlite') {
    let db: Database.Database | undefined;
    return {
      query: <T>(sql: string, parameters: unknown[]) => {
        db ??= new Database(location, { readonly: !writable });
        db.defaultSafeIntegers(true);
        const statement = db.prepare(sql);
        if (!statement.reader) {
          statement.run(...parameters);
          return Promise.resolve([] as T[]);
        }
        return Promise.resolve(statement.all(...parameters) as T[]);
      },
      close: () => Promise.resolve(db?.close()),
    };
  }
  // a pool, not one client: a test may read while another of its reads is running
  const pool = new Pool({
    connectionString: location,
    max: 2,
    types: {
      getTypeParser: (oid: number, format?: 'text' | 'binary') =>
        oid === 20 || oid === 23
          ? (value: string) => BigInt(value)
          : (types.getTypeParser(oid, format) as (value: string) => unknown),
    },
  });
  // pool.end() resolves once its clients are told to end, before their connections close: the
  // database dropped right after (startTestApp's close) may then cut one, which is no failure
  pool.on('error', () => undefined);
  return {
    query: async <T>(sql: string, parameters: unknown[]) => {
      let index = 0;
      const text = sql.replace(/\?/g, () => `$${++index}`);
      return (await pool.query(text, parameters)).rows as T[];
    },
    close: () => pool.end(),
  };
}

/**
 * A database of the jest project's engine for service processes to share: a fresh PostgreSQL
 * database, or a SQLite file in a folder of its own. `reader` reads it; `drop` closes the
 * reader and removes the database.
 */
export async function databaseForProcesses({ writable = false } = {}): Promise<{
  url: string;
  reader: ReturnType<typeof databaseReader>;
  drop: () => Promise<void>;
}> {
  if (ENGINE === 'postgres') {
    const created = await createTestDatabase();
    const reader = databaseReader(ENGINE, created.url, { writable });
    return {
      url: created.url,
      reader,
      drop: async () => {
        await reader.close();
        await created.drop();
      },
    };
  }
  const folder = makeTempFolder();
  const file = join(folder.path, 'store.sqlite');
  const reader = databaseReader(ENGINE, file, { writable });
  return {
    url: `sqlite:${file}`,
    reader,
    drop: async () => {
      await reader.close();
      folder.remove();
    },
  };
}

/** A folder that is removed with the returned function. */
export function makeTempFolder(): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), 'plant-store-test-'));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * Starts the app users run (createApp from setup-app.ts) on a real database, listening on an
 * ephemeral loopback port: a fresh SQLite file, or under TEST_ENGINE=postgres a fresh
 * PostgreSQL database (unless the test names its own database).
 */
export async function startTestApp(
  options: {
    databaseFile?: string;
    env?: Record<string, string>;
    port?: number;
    /** Modules beside AppModule, such as a fixture module of test/fixtures/. */
    imports?: CreateAppOptions['imports'];
  } = {},
): Promise<TestApp> {
  const folder = options.databaseFile ? undefined : makeTempFolder();
  const databaseFile =
    options.databaseFile ?? join(folder!.path, 'plant-store.sqlite');
  const engine: Engine = options.env?.DATABASE_URL?.startsWith('postgres')
    ? 'postgres'
    : options.env?.DATABASE_URL || options.databaseFile
      ? 'sqlite'
      : ENGINE;
  const postgres =
    engine === 'postgres' && !options.env?.DATABASE_URL
      ? await createTestDatabase()
      : undefined;
  const databaseUrl =
    postgres?.url ?? options.env?.DATABASE_URL ?? `sqlite:${databaseFile}`;
  const savedEnv = { ...process.env };
  Object.assign(process.env, {
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'silent',
    // suites send thousands of requests with one token; rate-limit tests set their own limits
    RATE_LIMIT_PER_TOKEN: '1000000000',
    RATE_LIMIT_PER_ADDRESS: '1000000000',
    RATE_LIMIT_BAD_TOKENS: '1000000000',
    ...options.env,
  });
  let app: NestExpressApplication;
  try {
    app = await createApp({ imports: options.imports });
  } finally {
    process.env = savedEnv;
  }
  // listening on loopback up front lets supertest send concurrent requests over real HTTP
  await app.listen(options.port ?? 0, '127.0.0.1');
  const server: Server = app.getHttpServer();
  const tokens = app.get(TokensService);
  // built in-process rather than fetched, so that no test finds a request of its address
  // already counted; test/openapi.e2e-spec.ts checks that the served document is this one
  const document = JSON.parse(
    openApiJson(
      await buildOpenApiDocument(app, app.get<AppConfig>(appConfig.KEY)),
    ),
  ) as Doc;
  useResponseContract(document);
  const reader = databaseReader(
    engine,
    engine === 'sqlite' ? databaseUrl.slice('sqlite:'.length) : databaseUrl,
  );
  return {
    app,
    server,
    databaseFile,
    http: () => checkedAgainstDocument(request(server)),
    issueToken: async ({
      scopes = app.get(ScopeCatalogue).all,
      expiresAt,
    } = {}) => (await tokens.issue({ name: 'test', scopes, expiresAt })).token,
    engine,
    query: (sql, ...parameters) => reader.query(sql, parameters),
    openDatabase: () => {
      const db = new Database(databaseFile, { readonly: true });
      db.defaultSafeIntegers(true);
      return db;
    },
    close: async () => {
      await reader.close();
      await app.close();
      await postgres?.drop();
      folder?.remove();
    },
  };
}

const HTTP_METHODS = [
  'get',
  'post',
  'put',
  'patch',
  'delete',
  'head',
  'options',
];

interface SuperagentResponse {
  status: number;
  text: string;
  headers: Record<string, string>;
}

/** supertest, with each answer checked against the served OpenAPI document. */
function checkedAgainstDocument(
  agent: ReturnType<typeof request>,
): ReturnType<typeof request> {
  return new Proxy(agent, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (
        typeof property !== 'string' ||
        !HTTP_METHODS.includes(property) ||
        typeof value !== 'function'
      ) {
        return value;
      }
      return (path: string) => {
        const test = (value as (path: string) => request.Test).call(
          target,
          path,
        );
        test.on('response', (response: SuperagentResponse) =>
          recordResponse({
            method: property.toUpperCase(),
            path,
            status: response.status,
            contentType: response.headers['content-type'],
            text: response.text ?? '',
            corsPreflight:
              property === 'options' &&
              response.headers['access-control-allow-methods'] !== undefined,
          }),
        );
        return test;
      };
    },
  });
}
