import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { load } from 'js-yaml';

/** An OpenAPI document or any part of it, as parsed JSON. */
export type Doc = { [key: string]: unknown };

export const REFERENCE_PATH = join(
  __dirname,
  '..',
  '..',
  'openapi',
  'plant-store.yaml',
);

export function loadReference(): Doc {
  return load(readFileSync(REFERENCE_PATH, 'utf8')) as Doc;
}

/** The generated document as committed and reviewed (npm run openapi:generate). */
export function loadReviewed(): Doc {
  return load(
    readFileSync(
      join(__dirname, '..', '..', 'openapi', 'service.yaml'),
      'utf8',
    ),
  ) as Doc;
}

const METHODS = [
  'get',
  'put',
  'post',
  'delete',
  'options',
  'head',
  'patch',
  'trace',
];

/** docs/decisions.md ("Status codes") lets the generated document add these Error responses. */
export const ALLOWED_EXTRA_STATUSES = [
  '401',
  '403',
  '404',
  '429',
  '500',
  '503',
];

/** Responses carry the plant's id, optional and int64, beyond the spec's Plant (docs/decisions.md). */
const ALLOWED_EXTRA_RESPONSE_PROPERTIES: Record<string, NormalizedSchema> = {
  id: { type: 'integer', format: 'int64' },
};

/** The bounds a schema sets on its values: where the reference sets one, the generated must match. */
const BOUNDS = [
  'minLength',
  'maxLength',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'pattern',
] as const;

type Bound = (typeof BOUNDS)[number];

export interface NormalizedSchema
  extends Partial<Record<Bound, string | number | bigint>> {
  /** one type, or OpenAPI 3.1's list of them (`[string, 'null']`), sorted */
  type?: string | string[];
  format?: string;
  enum?: unknown[];
  /** `x-enum-may-grow`: each module's event adds a value to the reference's */
  enumMayGrow?: boolean;
  /** carried into the instantiated reference for redocly diff; not compared here */
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  required?: string[];
  properties?: Record<string, NormalizedSchema>;
  items?: NormalizedSchema;
}

function asDoc(value: unknown): Doc {
  return typeof value === 'object' && value !== null ? (value as Doc) : {};
}

export function resolvePointer(document: Doc, ref: string): Doc {
  if (!ref.startsWith('#/'))
    throw new Error(`only local $refs are supported, got ${ref}`);
  return ref
    .slice(2)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<Doc>((node, part) => asDoc(node[part]), document);
}

/** A schema with $ref resolved and allOf merged, keeping only what the contract fixes. */
export function normalizeSchema(
  document: Doc,
  schema: unknown,
  depth = 0,
): NormalizedSchema {
  if (depth > 32) throw new Error('schema nesting too deep (a $ref cycle?)');
  let node = asDoc(schema);
  if (typeof node.$ref === 'string') node = resolvePointer(document, node.$ref);
  const parts = Array.isArray(node.allOf)
    ? node.allOf.map((part) => normalizeSchema(document, part, depth + 1))
    : [];
  const own: NormalizedSchema = {};
  if (typeof node.type === 'string') own.type = node.type;
  if (Array.isArray(node.type)) own.type = (node.type as string[]).toSorted();
  if (typeof node.format === 'string') own.format = node.format;
  if (Array.isArray(node.enum)) own.enum = node.enum;
  if (node['x-enum-may-grow'] === true) own.enumMayGrow = true;
  for (const bound of BOUNDS) {
    if (node[bound] !== undefined) {
      own[bound] = node[bound] as string | number | bigint;
    }
  }
  if (typeof node.minItems === 'number') own.minItems = node.minItems;
  if (typeof node.maxItems === 'number') own.maxItems = node.maxItems;
  if (typeof node.uniqueItems === 'boolean') own.uniqueItems = node.uniqueItems;
  if (Array.isArray(node.required)) own.required = node.required as string[];
  if (node.properties) {
    own.properties = Object.fromEntries(
      Object.entries(asDoc(node.properties)).map(([name, value]) => [
        name,
        normalizeSchema(document, value, depth + 1),
      ]),
    );
  }
  if (node.items) own.items = normalizeSchema(document, node.items, depth + 1);
  return [...parts, own].reduce(mergeSchemas, {});
}

function mergeSchemas(
  a: NormalizedSchema,
  b: NormalizedSchema,
): NormalizedSchema {
  const merged: NormalizedSchema = { ...a, ...b };
  if (a.type && b.type && String(a.type) !== String(b.type))
    throw new Error(
      `allOf mixes types ${String(a.type)} and ${String(b.type)}`,
    );
  const required = [
    ...new Set([...(a.required ?? []), ...(b.required ?? [])]),
  ].sort();
  if (required.length > 0) merged.required = required;
  if (a.properties || b.properties) {
    const properties: Record<string, NormalizedSchema> = { ...a.properties };
    for (const [name, schema] of Object.entries(b.properties ?? {})) {
      properties[name] = properties[name]
        ? mergeSchemas(properties[name], schema)
        : schema;
    }
    merged.properties = properties;
  }
  if (!merged.type && merged.properties) merged.type = 'object';
  return merged;
}

/** Differences of a generated schema from the reference's, as sentences. */
export function compareSchemas(
  where: string,
  reference: NormalizedSchema,
  generated: NormalizedSchema,
  allowedExtraProperties: Record<string, NormalizedSchema> = {},
): string[] {
  const differences: string[] = [];
  for (const key of ['type', 'format'] as const) {
    const [wanted, found] = [reference[key], generated[key]].map((value) =>
      value === undefined ? undefined : String(value),
    );
    if (wanted !== found) {
      differences.push(
        `${where}: ${key} is ${found ?? 'not set'} in the generated document, ${wanted ?? 'not set'} in the reference`,
      );
    }
  }
  // each module's types take their place in the list by name, so growth may come anywhere
  const grown =
    generated.enumMayGrow === true &&
    (reference.enum ?? []).every((value) => generated.enum?.includes(value));
  if (
    !grown &&
    JSON.stringify(reference.enum) !== JSON.stringify(generated.enum)
  ) {
    differences.push(
      `${where}: enum differs (${JSON.stringify(generated.enum)} vs ${JSON.stringify(reference.enum)})`,
    );
  }
  // a bound the reference sets is part of the contract; one only the generated document sets
  // is a tightening that docs/decisions.md makes (name and tag lengths, int64 bounds)
  for (const bound of BOUNDS) {
    const wanted = reference[bound];
    if (wanted !== undefined && String(wanted) !== String(generated[bound])) {
      differences.push(
        `${where}: ${bound} is ${generated[bound] === undefined ? 'not set' : String(generated[bound])} in the generated document, ${String(wanted)} in the reference`,
      );
    }
  }
  const referenceRequired = new Set(reference.required ?? []);
  const generatedRequired = new Set(generated.required ?? []);
  for (const name of referenceRequired) {
    if (!generatedRequired.has(name)) {
      differences.push(
        `${where}: property ${name} is required in the reference but not in the generated document`,
      );
    }
  }
  for (const name of generatedRequired) {
    if (!referenceRequired.has(name)) {
      differences.push(
        `${where}: property ${name} is required in the generated document but optional in the reference`,
      );
    }
  }
  const referenceProperties = reference.properties ?? {};
  const generatedProperties = generated.properties ?? {};
  for (const [name, schema] of Object.entries(referenceProperties)) {
    if (!generatedProperties[name]) {
      differences.push(
        `${where}: property ${name} of the reference is missing from the generated document`,
      );
    } else {
      differences.push(
        ...compareSchemas(
          `${where}.${name}`,
          schema,
          generatedProperties[name],
        ),
      );
    }
  }
  for (const [name, schema] of Object.entries(generatedProperties)) {
    if (referenceProperties[name]) continue;
    const allowed = allowedExtraProperties[name];
    if (!allowed) {
      differences.push(
        `${where}: property ${name} is in the generated document but not in the reference`,
      );
    } else if (generatedRequired.has(name)) {
      continue; // reported above as required
    } else {
      differences.push(...compareSchemas(`${where}.${name}`, allowed, schema));
    }
  }
  if (reference.items || generated.items) {
    differences.push(
      ...compareSchemas(
        `${where}[]`,
        reference.items ?? {},
        generated.items ?? {},
        allowedExtraProperties,
      ),
    );
  }
  return differences;
}

/** Operations by `METHOD /path`, and webhooks by `WEBHOOK name METHOD`. */
function operationsOf(document: Doc): Map<string, Doc> {
  const operations = new Map<string, Doc>();
  const items = [
    ...Object.entries(asDoc(document.paths)).map(([path, item]) => ({
      prefix: '',
      path,
      item,
    })),
    ...Object.entries(asDoc(document.webhooks)).map(([path, item]) => ({
      prefix: 'WEBHOOK ',
      path,
      item,
    })),
  ];
  for (const { prefix, path, item } of items) {
    const pathParameters = (asDoc(item).parameters as Doc[] | undefined) ?? [];
    for (const method of METHODS) {
      const operation = asDoc(item)[method];
      if (!operation) continue;
      const parameters = [
        ...pathParameters,
        ...((asDoc(operation).parameters as Doc[] | undefined) ?? []),
      ].map((parameter) =>
        typeof parameter.$ref === 'string'
          ? resolvePointer(document, parameter.$ref)
          : parameter,
      );
      operations.set(`${prefix}${method.toUpperCase()} ${path}`, {
        ...asDoc(operation),
        parameters,
      });
    }
  }
  return operations;
}

function effectiveSecurity(document: Doc, operation: Doc): string {
  return JSON.stringify(operation.security ?? document.security ?? []);
}

function mediaSchemas(
  document: Doc,
  content: unknown,
): Map<string, NormalizedSchema> {
  return new Map(
    Object.entries(asDoc(content)).map(([mediaType, media]) => [
      mediaType,
      normalizeSchema(document, asDoc(media).schema),
    ]),
  );
}

function compareContent(
  where: string,
  reference: Doc,
  referenceContent: unknown,
  generated: Doc,
  generatedContent: unknown,
  allowedExtraProperties: Record<string, NormalizedSchema>,
): string[] {
  const referenceMedia = mediaSchemas(reference, referenceContent);
  const generatedMedia = mediaSchemas(generated, generatedContent);
  const differences: string[] = [];
  for (const [mediaType, schema] of referenceMedia) {
    const generatedSchema = generatedMedia.get(mediaType);
    if (!generatedSchema) {
      differences.push(
        `${where}: media type ${mediaType} is missing from the generated document`,
      );
    } else {
      differences.push(
        ...compareSchemas(
          `${where} ${mediaType}`,
          schema,
          generatedSchema,
          allowedExtraProperties,
        ),
      );
    }
  }
  for (const mediaType of generatedMedia.keys()) {
    if (!referenceMedia.has(mediaType)) {
      differences.push(
        `${where}: media type ${mediaType} is not in the reference`,
      );
    }
  }
  return differences;
}

function compareOperation(
  key: string,
  reference: Doc,
  referenceOp: Doc,
  generated: Doc,
  generatedOp: Doc,
): string[] {
  const differences: string[] = [];
  if (
    effectiveSecurity(reference, referenceOp) !==
    effectiveSecurity(generated, generatedOp)
  ) {
    differences.push(
      `${key}: security is ${effectiveSecurity(generated, generatedOp)} in the generated document, ${effectiveSecurity(reference, referenceOp)} in the reference`,
    );
  }
  const parameterKey = (parameter: Doc) =>
    `${String(parameter.in)} parameter ${String(parameter.name)}`;
  const generatedParameters = new Map(
    ((generatedOp.parameters as Doc[] | undefined) ?? []).map((parameter) => [
      parameterKey(parameter),
      parameter,
    ]),
  );
  const referenceParameterKeys = new Set<string>();
  for (const parameter of (referenceOp.parameters as Doc[] | undefined) ?? []) {
    const name = parameterKey(parameter);
    referenceParameterKeys.add(name);
    const counterpart = generatedParameters.get(name);
    if (!counterpart) {
      differences.push(
        `${key}: ${name} is missing from the generated document`,
      );
      continue;
    }
    if (Boolean(parameter.required) !== Boolean(counterpart.required)) {
      differences.push(
        `${key}: ${name} is ${counterpart.required ? '' : 'not '}required in the generated document`,
      );
    }
    differences.push(
      ...compareSchemas(
        `${key} ${name}`,
        normalizeSchema(reference, parameter.schema),
        normalizeSchema(generated, counterpart.schema),
      ),
    );
  }
  for (const name of generatedParameters.keys()) {
    if (!referenceParameterKeys.has(name))
      differences.push(`${key}: ${name} is not in the reference`);
  }

  const referenceBody = asDoc(referenceOp.requestBody);
  const generatedBody = asDoc(generatedOp.requestBody);
  if (Boolean(referenceBody.required) !== Boolean(generatedBody.required)) {
    differences.push(
      `${key}: the request body is ${generatedBody.required ? '' : 'not '}required in the generated document`,
    );
  }
  differences.push(
    ...compareContent(
      `${key} request body`,
      reference,
      referenceBody.content,
      generated,
      generatedBody.content,
      {},
    ),
  );

  const referenceResponses = asDoc(referenceOp.responses);
  const generatedResponses = asDoc(generatedOp.responses);
  for (const [status, response] of Object.entries(referenceResponses)) {
    const counterpart = generatedResponses[status];
    if (!counterpart) {
      differences.push(
        `${key}: response ${status} is missing from the generated document`,
      );
      continue;
    }
    differences.push(
      ...compareContent(
        `${key} response ${status}`,
        reference,
        asDoc(response).content,
        generated,
        asDoc(counterpart).content,
        ALLOWED_EXTRA_RESPONSE_PROPERTIES,
      ),
    );
  }
  const errorSchema = normalizeSchema(reference, {
    $ref: '#/components/schemas/Error',
  });
  for (const [status, response] of Object.entries(generatedResponses)) {
    if (referenceResponses[status]) continue;
    if (!ALLOWED_EXTRA_STATUSES.includes(status)) {
      differences.push(
        `${key}: response ${status} is not in the reference, nor one the decisions allow`,
      );
      continue;
    }
    const schemas = mediaSchemas(generated, asDoc(response).content);
    const errorBody = schemas.get('application/json');
    if (!errorBody || schemas.size !== 1) {
      differences.push(
        `${key}: response ${status} must be an application/json Error`,
      );
    } else {
      differences.push(
        ...compareSchemas(
          `${key} response ${status} application/json`,
          errorSchema,
          errorBody,
        ),
      );
    }
  }
  return differences;
}

/**
 * Every difference of the generated document from the reference that the decisions do not
 * allow, as readable sentences; empty when the generated document honours the contract.
 * The reference keeps the seed's interface: an operation it does not have (a new module's)
 * must be in `reviewed`, the committed openapi/service.yaml, where a change shows in review.
 */
export function compareWithReference(
  reference: Doc,
  generated: Doc,
  reviewed: Doc = {},
): string[] {
  const differences: string[] = [];
  if (generated.openapi !== reference.openapi) {
    differences.push(
      `openapi is ${String(generated.openapi)}, the reference says ${String(reference.openapi)}`,
    );
  }
  const referenceInfo = asDoc(reference.info);
  const generatedInfo = asDoc(generated.info);
  for (const key of ['title', 'version'] as const) {
    if (referenceInfo[key] !== generatedInfo[key]) {
      differences.push(
        `info.${key} is ${String(generatedInfo[key])}, the reference says ${String(referenceInfo[key])}`,
      );
    }
  }
  if (asDoc(referenceInfo.license).name !== asDoc(generatedInfo.license).name) {
    differences.push(
      `info.license.name is ${String(asDoc(generatedInfo.license).name)}, the reference says MIT`,
    );
  }
  for (const [name, scheme] of Object.entries(
    asDoc(asDoc(reference.components).securitySchemes),
  )) {
    const counterpart = asDoc(
      asDoc(asDoc(generated.components).securitySchemes)[name],
    );
    for (const key of ['type', 'scheme'] as const) {
      if (asDoc(scheme)[key] !== counterpart[key]) {
        differences.push(
          `security scheme ${name}: ${key} is ${String(counterpart[key])} in the generated document, ${String(asDoc(scheme)[key])} in the reference`,
        );
      }
    }
  }
  for (const name of Object.keys(asDoc(asDoc(reference.components).schemas))) {
    if (!asDoc(asDoc(generated.components).schemas)[name]) {
      differences.push(
        `schema ${name} is missing from the generated document's components`,
      );
      continue;
    }
    differences.push(
      ...compareSchemas(
        `schema ${name}`,
        normalizeSchema(reference, { $ref: `#/components/schemas/${name}` }),
        normalizeSchema(generated, { $ref: `#/components/schemas/${name}` }),
        name === 'Plant' ? ALLOWED_EXTRA_RESPONSE_PROPERTIES : {},
      ),
    );
  }
  const referenceOperations = operationsOf(reference);
  const generatedOperations = operationsOf(generated);
  for (const [key, operation] of referenceOperations) {
    const counterpart = generatedOperations.get(key);
    if (!counterpart) {
      differences.push(`${key} is missing from the generated document`);
    } else {
      if (operation.operationId !== counterpart.operationId) {
        differences.push(
          `${key}: operationId is ${String(counterpart.operationId)}, the reference says ${String(operation.operationId)}`,
        );
      }
      differences.push(
        ...compareOperation(key, reference, operation, generated, counterpart),
      );
    }
  }
  const reviewedOperations = operationsOf(reviewed);
  for (const [key, operation] of generatedOperations) {
    if (
      !referenceOperations.has(key) &&
      !reviewedOperations.has(key) &&
      effectiveSecurity(generated, operation) !== '[]'
    ) {
      differences.push(
        `${key} is in the generated document but neither in the reference nor in openapi/service.yaml (only public probes may be added unreviewed)`,
      );
    }
  }
  return differences;
}

/**
 * `format: int64` means the range [-2^63, 2^63 - 1]; the served document says so with
 * minimum and maximum, so the reference is given them too before documents are diffed.
 */
function boundInt64(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(boundInt64);
  if (typeof node !== 'object' || node === null) return;
  const schema = node as Doc;
  if (schema.type === 'integer' && schema.format === 'int64') {
    schema.minimum ??= -(2n ** 63n);
    schema.maximum ??= 2n ** 63n - 1n;
  }
  Object.values(schema).forEach(boundInt64);
}

/**
 * The reference as one deployment serves it: server variables filled in, allOf merged, int64
 * bounds stated. It holds bigints: write it with lossless-json's stringify.
 */
export function instantiateReference(reference: Doc, serverUrl: string): Doc {
  const copy = structuredClone(reference);
  copy.servers = [
    {
      url: serverUrl,
      description: asDoc(asDoc(reference.servers)[0]).description,
    },
  ];
  const schemas = asDoc(asDoc(copy.components).schemas);
  for (const name of Object.keys(schemas)) {
    schemas[name] = toJsonSchema(
      normalizeSchema(reference, { $ref: `#/components/schemas/${name}` }),
    );
  }
  boundInt64(copy);
  return copy;
}

function toJsonSchema(schema: NormalizedSchema): Doc {
  const result: Doc = { ...schema };
  if (schema.properties) {
    result.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, value]) => [
        name,
        toJsonSchema(value),
      ]),
    );
  }
  if (schema.items) result.items = toJsonSchema(schema.items);
  return result;
}
