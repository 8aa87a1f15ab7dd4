/**
 * What a new version of the OpenAPI document takes away from a client written against an
 * older one. No maintained npm package compares OpenAPI 3.1 documents (openapi-diff stops at
 * 3.0.3; oasdiff and openapi-changes are Go binaries the registry cannot give us), so this
 * checks the changes that break generated clients and hand-written callers alike:
 *
 * - an operation, a webhook or a documented status removed;
 * - a request that was valid refused: a new required parameter or field, a field or
 *   parameter removed, a type or format changed, a bound tightened or added (maxLength,
 *   maximum, minItems, ...), a pattern added or changed, an enum value removed;
 * - an answer a client could not read: a field removed or no longer required, a type or
 *   format changed, an enum value added.
 *
 * Webhook bodies are what the service sends, so they are held to the rules of answers.
 */

type Schema = {
  $ref?: string;
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  additionalProperties?: boolean | Schema;
  [bound: string]: unknown;
};

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Schema;
}

interface Operation {
  parameters?: Parameter[];
  requestBody?: {
    required?: boolean;
    content?: Record<string, { schema?: Schema }>;
  };
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

export interface OpenApiDocument {
  paths?: Record<string, Record<string, Operation>>;
  webhooks?: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** Bounds that refuse more as they grow, and those that refuse more as they shrink. */
const LOWER_BOUNDS = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems'];
const UPPER_BOUNDS = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems'];

class Comparison {
  readonly breaks: string[] = [];

  constructor(
    private readonly before: OpenApiDocument,
    private readonly after: OpenApiDocument,
  ) {}

  run(): string[] {
    this.operations('paths', '');
    this.operations('webhooks', 'webhook ');
    return this.breaks;
  }

  private operations(section: 'paths' | 'webhooks', label: string): void {
    for (const [path, item] of Object.entries(this.before[section] ?? {})) {
      for (const method of METHODS.filter((name) => item[name])) {
        const where = `${label}${method.toUpperCase()} ${path}`;
        const now = this.after[section]?.[path]?.[method];
        if (!now) {
          this.breaks.push(`${where}: removed`);
          continue;
        }
        const asAnswer = section === 'webhooks';
        this.operation(where, item[method], now, asAnswer);
      }
    }
  }

  private operation(
    where: string,
    was: Operation,
    now: Operation,
    webhook: boolean,
  ): void {
    const key = ({ in: place, name }: Parameter) => `${place} ${name}`;
    const before = new Map((was.parameters ?? []).map((p) => [key(p), p]));
    const after = new Map((now.parameters ?? []).map((p) => [key(p), p]));
    for (const [name, parameter] of after) {
      const old = before.get(name);
      if (parameter.required && !old?.required && !webhook) {
        this.breaks.push(`${where}: ${name} is now required`);
      }
    }
    for (const [name, parameter] of before) {
      const current = after.get(name);
      const at = `${where}: ${name}`;
      if (!current) {
        if (!webhook) this.breaks.push(`${at}: removed`);
      } else if (webhook) {
        this.answer(at, parameter.schema, current.schema);
      } else {
        this.request(at, parameter.schema, current.schema);
      }
    }
    const body = (operation: Operation) =>
      operation.requestBody?.content?.['application/json']?.schema;
    if (webhook) {
      this.answer(`${where}: body`, body(was), body(now));
    } else {
      if (now.requestBody?.required && !was.requestBody?.required) {
        this.breaks.push(`${where}: a body is now required`);
      }
      this.request(`${where}: body`, body(was), body(now));
    }
    for (const [status, response] of Object.entries(was.responses ?? {})) {
      const current = now.responses?.[status];
      if (!current) {
        this.breaks.push(`${where}: answer ${status} removed`);
        continue;
      }
      for (const [type, { schema }] of Object.entries(response.content ?? {})) {
        this.answer(
          `${where}: answer ${status}`,
          schema,
          current.content?.[type]?.schema,
        );
      }
    }
  }

  private resolve(
    document: OpenApiDocument,
    schema: Schema | undefined,
  ): Schema | undefined {
    let resolved = schema;
    for (let hops = 0; resolved?.$ref && hops < 32; hops++) {
      const name = resolved.$ref.replace('#/components/schemas/', '');
      resolved = document.components?.schemas?.[name];
    }
    return resolved;
  }

  /** What a client sends: anything the old schema accepted must still be accepted. */
  private request(
    at: string,
    wasRef?: Schema,
    nowRef?: Schema,
    seen = new Set<Schema>(),
  ): void {
    const was = this.resolve(this.before, wasRef);
    const now = this.resolve(this.after, nowRef);
    if (!was || !now || seen.has(was)) return;
    seen.add(was);
    this.sameType(at, was, now);
    for (const bound of LOWER_BOUNDS) {
      if (
        now[bound] !== undefined &&
        !((was[bound] as number) >= (now[bound] as number))
      ) {
        this.breaks.push(
          `${at}: ${bound} ${describe(was[bound])} → ${describe(now[bound])}`,
        );
      }
    }
    for (const bound of UPPER_BOUNDS) {
      if (
        now[bound] !== undefined &&
        !((was[bound] as number) <= (now[bound] as number))
      ) {
        this.breaks.push(
          `${at}: ${bound} ${describe(was[bound])} → ${describe(now[bound])}`,
        );
      }
    }
    if (now.pattern !== undefined && now.pattern !== was.pattern) {
      this.breaks.push(
        `${at}: pattern ${describe(was.pattern)} → ${now.pattern}`,
      );
    }
    if (now.enum && !was.enum) {
      this.breaks.push(`${at}: now only ${now.enum.map(describe).join(', ')}`);
    } else if (now.enum) {
      const lost = was.enum!.filter((value) => !now.enum!.includes(value));
      if (lost.length > 0) {
        this.breaks.push(
          `${at}: no longer accepts ${lost.map(describe).join(', ')}`,
        );
      }
    }
    for (const name of now.required ?? []) {
      if (!(was.required ?? []).includes(name)) {
        this.breaks.push(`${at}.${name}: now required`);
      }
    }
    for (const [name, property] of Object.entries(was.properties ?? {})) {
      const current = now.properties?.[name];
      if (!current) {
        this.breaks.push(`${at}.${name}: removed`);
      } else {
        this.request(`${at}.${name}`, property, current, seen);
      }
    }
    if (was.items && now.items)
      this.request(`${at}[]`, was.items, now.items, seen);
  }

  /** What a client reads: anything the new schema allows, the old one promised. */
  private answer(
    at: string,
    wasRef?: Schema,
    nowRef?: Schema,
    seen = new Set<Schema>(),
  ): void {
    const was = this.resolve(this.before, wasRef);
    const now = this.resolve(this.after, nowRef);
    if (!was) return;
    if (!now) {
      this.breaks.push(`${at}: no longer described`);
      return;
    }
    if (seen.has(was)) return;
    seen.add(was);
    this.sameType(at, was, now);
    if (was.enum && !now.enum) {
      this.breaks.push(
        `${at}: no longer limited to ${was.enum.map(describe).join(', ')}`,
      );
    } else if (was.enum) {
      const added = now.enum!.filter((value) => !was.enum!.includes(value));
      if (added.length > 0) {
        this.breaks.push(`${at}: may now be ${added.map(describe).join(', ')}`);
      }
    }
    for (const name of was.required ?? []) {
      if (!(now.required ?? []).includes(name)) {
        this.breaks.push(`${at}.${name}: no longer always present`);
      }
    }
    for (const [name, property] of Object.entries(was.properties ?? {})) {
      const current = now.properties?.[name];
      if (!current) {
        this.breaks.push(`${at}.${name}: removed`);
      } else {
        this.answer(`${at}.${name}`, property, current, seen);
      }
    }
    if (was.items && now.items)
      this.answer(`${at}[]`, was.items, now.items, seen);
  }

  private sameType(at: string, was: Schema, now: Schema): void {
    for (const keyword of ['type', 'format'] as const) {
      if (JSON.stringify(was[keyword]) !== JSON.stringify(now[keyword])) {
        this.breaks.push(
          `${at}: ${keyword} ${describe(was[keyword])} → ${describe(now[keyword])}`,
        );
      }
    }
  }
}

function describe(value: unknown): string {
  return value === undefined ? 'none' : JSON.stringify(value);
}

/** Each change of `after` that breaks a client of `before`, one line each; none is []. */
export function breakingChanges(
  before: OpenApiDocument,
  after: OpenApiDocument,
): string[] {
  return new Comparison(before, after).run();
}
