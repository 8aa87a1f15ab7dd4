import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { Doc } from './openapi-contract';

const DOCUMENT_ID = 'https://plant-store.test/openapi.json';

/** Served by Swagger itself rather than by an operation of the document. */
const UNDOCUMENTED_PREFIXES = ['/docs', '/openapi.json', '/openapi.yaml'];

export interface ObservedResponse {
  method: string;
  path: string;
  status: number;
  contentType: string | undefined;
  text: string;
  /** A CORS preflight's answer (it allows methods): the browser's question, not an operation. */
  corsPreflight?: boolean;
}

function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [
      key,
      key === '$ref' && typeof inner === 'string' && inner.startsWith('#')
        ? DOCUMENT_ID + inner
        : rewriteRefs(inner),
    ]),
  );
}

function templateToPattern(template: string): RegExp {
  const escaped = template
    .split(/\{[^}]+\}/)
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^/]+');
  return new RegExp(`^${escaped}$`);
}

/**
 * Checks answers against the service's own OpenAPI document, in JSON Schema 2020-12 mode: the
 * status must be documented for the operation, and the body must match that status's schema.
 */
export class ResponseContract {
  private readonly ajv = new Ajv2020({ strict: false, allErrors: true });
  private readonly validators = new Map<string, ValidateFunction>();
  private readonly routes: { pattern: RegExp; template: string }[];

  constructor(private readonly document: Doc) {
    addFormats(this.ajv);
    this.ajv.addSchema({
      $id: DOCUMENT_ID,
      components: rewriteRefs(document.components),
    });
    this.routes = Object.keys(document.paths as Doc)
      .map((template) => ({ template, pattern: templateToPattern(template) }))
      // literal segments win over templated ones (/plants/search before /plants/{id})
      .sort(
        (a, b) => a.template.split('{').length - b.template.split('{').length,
      );
  }

  /** Why this answer breaks the document, or undefined when it honours it. */
  check(response: ObservedResponse): string | undefined {
    // express routes /plants/ as /plants (non-strict routing)
    const path = response.path.split('?')[0].replace(/(.)\/$/, '$1');
    if (
      UNDOCUMENTED_PREFIXES.some(
        (prefix) => path === prefix || path.startsWith(`${prefix}/`),
      )
    )
      return undefined;
    if (response.corsPreflight && response.status === 204) return undefined;
    const where = `${response.method} ${response.path} → ${response.status}`;
    const route = this.routes.find(({ pattern }) => pattern.test(path));
    const operation = route
      ? ((this.document.paths as Doc)[route.template] as Doc)[
          response.method.toLowerCase()
        ]
      : undefined;
    let schema: unknown;
    if (!operation) {
      // an unknown path is rate limited like any other (BearerGuard's admit runs before routing)
      if (response.status !== 404 && response.status !== 429)
        return `${where}: no operation is documented for it, so only a 404 or 429 Error may answer`;
      schema = { $ref: '#/components/schemas/Error' };
    } else {
      const documented = ((operation as Doc).responses as Doc)[
        String(response.status)
      ] as Doc | undefined;
      if (!documented)
        return `${where}: status ${response.status} is not documented for this operation`;
      const content = documented.content as Doc | undefined;
      if (!content) {
        return response.text === ''
          ? undefined
          : `${where}: the document promises no body, got ${response.text.slice(0, 200)}`;
      }
      if (
        !response.contentType?.startsWith('application/json') ||
        !content['application/json']
      ) {
        return `${where}: Content-Type ${response.contentType} is not documented`;
      }
      schema = (content['application/json'] as Doc).schema;
    }
    const key = JSON.stringify(schema);
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile(rewriteRefs(schema) as object);
      this.validators.set(key, validate);
    }
    let body: unknown;
    try {
      body = JSON.parse(response.text);
    } catch {
      return `${where}: the body is not JSON: ${response.text.slice(0, 200)}`;
    }
    if (!validate(body)) {
      return `${where}: the body ${response.text.slice(0, 200)} does not match the document: ${this.ajv.errorsText(validate.errors)}`;
    }
    return undefined;
  }
}

let activeContract: ResponseContract | undefined;
const violations: string[] = [];

export function useResponseContract(document: Doc): void {
  activeContract = new ResponseContract(document);
}

/** Every e2e request goes through here (supertest and raw HTTP helpers alike). */
export function recordResponse(response: ObservedResponse): void {
  const violation = activeContract?.check(response);
  if (violation) violations.push(violation);
}

// any test file that starts the app gets this check after each of its tests
afterEach(() => {
  const found = violations.splice(0);
  if (found.length > 0) {
    throw new Error(
      `answers that break the OpenAPI document:\n${found.join('\n')}`,
    );
  }
});
