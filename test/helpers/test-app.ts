import type { NestExpressApplication } from '@nestjs/platform-express';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { SCOPES, type Scope } from '../../src/auth/scopes';
import { TokensService } from '../../src/auth/tokens.service';
import { createApp } from '../../src/setup-app';
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
  /** A second, independent connection to the same SQLite file, reading int64s exactly. */
  openDatabase: () => Database.Database;
  close: () => Promise<void>;
}

/** A folder that is removed with the returned function. */
export function makeTempFolder(): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), 'plant-store-test-'));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}

/**
 * Starts the app users run (createApp from setup-app.ts) on a real SQLite file, listening on
 * an ephemeral loopback port.
 */
export async function startTestApp(
  options: {
    databaseFile?: string;
    env?: Record<string, string>;
    port?: number;
  } = {},
): Promise<TestApp> {
  const folder = options.databaseFile ? undefined : makeTempFolder();
  const databaseFile =
    options.databaseFile ?? join(folder!.path, 'plant-store.sqlite');
  const savedEnv = { ...process.env };
  Object.assign(process.env, {
    DATABASE_URL: `sqlite:${databaseFile}`,
    LOG_LEVEL: 'silent',
    // suites send thousands of requests with one token; rate-limit tests set their own limits
    RATE_LIMIT_PER_TOKEN: '1000000000',
    RATE_LIMIT_PER_ADDRESS: '1000000000',
    RATE_LIMIT_BAD_TOKENS: '1000000000',
    ...options.env,
  });
  let app: NestExpressApplication;
  try {
    app = await createApp();
  } finally {
    process.env = savedEnv;
  }
  // listening on loopback up front lets supertest send concurrent requests over real HTTP
  await app.listen(options.port ?? 0, '127.0.0.1');
  const server: Server = app.getHttpServer();
  const tokens = app.get(TokensService);
  const document = JSON.parse(
    (await request(server).get('/openapi.json')).text,
  ) as Doc;
  useResponseContract(document);
  return {
    app,
    server,
    databaseFile,
    http: () => checkedAgainstDocument(request(server)),
    issueToken: async ({ scopes = [...SCOPES], expiresAt } = {}) =>
      (await tokens.issue({ name: 'test', scopes, expiresAt })).token,
    openDatabase: () => {
      const db = new Database(databaseFile, { readonly: true });
      db.defaultSafeIntegers(true);
      return db;
    },
    close: async () => {
      await app.close();
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
          }),
        );
        return test;
      };
    },
  });
}
