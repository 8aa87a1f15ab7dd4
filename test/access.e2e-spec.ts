import { randomUUID } from 'node:crypto';
import { RouteAccessCheckService } from '../src/platform/auth/route-access-check.service';
import { ScopeCatalogue } from '../src/platform/auth/scopes';
import { IdentityProvider } from './helpers/identity-provider';
import type { Doc } from './helpers/openapi-contract';
import { startTestApp, type TestApp } from './helpers/test-app';

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

interface Operation {
  method: string;
  path: string;
  isPublic: boolean;
  /** The scopes its 403 answer names, from the document. */
  scopes: string;
}

/** Every operation of the served document, its path parameters filled with valid values. */
function operationsOf(document: Doc): Operation[] {
  const operations: Operation[] = [];
  for (const [template, item] of Object.entries(document.paths as Doc)) {
    for (const method of METHODS) {
      const operation = (item as Doc)[method] as Doc | undefined;
      if (!operation) continue;
      const parameters = (operation.parameters ?? []) as Doc[];
      const path = template.replace(/\{(\w+)\}/g, (_match, name: string) => {
        const { schema } = parameters.find((p) => p.name === name) as {
          schema: Doc;
        };
        return schema.format === 'uuid' ? randomUUID() : '1';
      });
      const forbidden = (operation.responses as Doc)['403'] as
        | { description: string }
        | undefined;
      operations.push({
        method,
        path,
        isPublic: JSON.stringify(operation.security) === '[]',
        scopes: forbidden?.description ?? '',
      });
    }
  }
  return operations;
}

describe.each(['pst_ tokens', 'access tokens of an identity provider'])(
  'access: every route declares who may call it, for %s',
  (kind) => {
    let testApp: TestApp;
    let provider: IdentityProvider | undefined;
    let operations: Operation[];
    let scopeless: string;
    let everything: string;

    beforeAll(async () => {
      // the same rules for both kinds of token (docs/decisions.md, "Identity provider tokens")
      if (kind !== 'pst_ tokens') provider = await IdentityProvider.start();
      testApp = await startTestApp({ env: provider?.env() ?? {} });
      const document = (await testApp.http().get('/openapi.json')).body as Doc;
      operations = operationsOf(document);
      const allScopes = testApp.app.get(ScopeCatalogue).all;
      scopeless = provider
        ? await provider.token('nobody', '')
        : await testApp.issueToken({ scopes: [] });
      everything = provider
        ? await provider.token('admin', allScopes.join(' '))
        : await testApp.issueToken({ scopes: allScopes });
    });

    afterAll(async () => {
      await testApp.close();
      await provider?.close();
    });

    it('has no route without @Public() or @RequireScopes(...), and documents every route', () => {
      const check = testApp.app.get(RouteAccessCheckService);
      expect(check.routesWithoutAccess()).toEqual([]);
      // every route is an operation of the document, so the calls below reach all of them
      expect(operations).toHaveLength(check.routes().length);
      expect(operations.filter(({ isPublic }) => !isPublic).length).toBe(
        check.routes().filter(({ isPublic }) => !isPublic).length,
      );
    });

    it('answers 401 to every non-public operation called without a token', async () => {
      for (const { method, path, isPublic } of operations) {
        if (isPublic) continue;
        const response = await testApp.http()[method as 'get'](path);
        expect(`${method} ${path} ${response.status}`).toBe(
          `${method} ${path} 401`,
        );
      }
    });

    it('answers 403 to every non-public operation called with a live token that holds no scope, naming the scope', async () => {
      for (const { method, path, isPublic, scopes } of operations) {
        if (isPublic) continue;
        const response = await testApp
          .http()
          [method as 'get'](path)
          .set('Authorization', `Bearer ${scopeless}`);
        expect(`${method} ${path} ${response.status}`).toBe(
          `${method} ${path} 403`,
        );
        expect(scopes).toContain(
          /scope="([^"]+)"/.exec(response.headers['www-authenticate'])![1],
        );
      }
    });

    it('lets a token with every scope past the guard on every operation', async () => {
      for (const { method, path } of operations) {
        const response = await testApp
          .http()
          [method as 'get'](path)
          .set('Authorization', `Bearer ${everything}`);
        expect([401, 403]).not.toContain(response.status);
      }
    });

    it('serves the public operations without a token', async () => {
      const open = operations.filter(({ isPublic }) => isPublic);
      expect(open.map(({ path }) => path).sort()).toEqual([
        '/health/live',
        '/health/ready',
      ]);
      for (const { method, path } of open) {
        const response = await testApp.http()[method as 'get'](path);
        expect(response.status).toBe(200);
      }
    });
  },
);
