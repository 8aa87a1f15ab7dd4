import createClient, { type Client, type Middleware } from 'openapi-fetch';
import { isLosslessNumber, parse, stringify } from 'lossless-json';
import { INT64_FIELDS } from './int64-fields';
import type { paths } from './schema';

export type { components, operations, paths } from './schema';

/**
 * The plant store's typed client: openapi-fetch over the types generated from the reference
 * document, with every int64 a `bigint` both ways. Ids are written as exact JSON numbers and
 * read back exactly, where `JSON.parse` would round any id beyond 2^53.
 */
export type PlantStoreClient = Client<paths>;

export interface PlantStoreClientOptions {
  /** The service's URL, e.g. `http://localhost:3000`. */
  baseUrl: string;
  /** A `pst_...` token; `npm run tokens -- create --name me` issues one. */
  token?: string;
  /** A fetch of your own (tests, proxies); the global one by default. */
  fetch?: typeof globalThis.fetch;
}

export function createPlantStoreClient({
  baseUrl,
  token,
  fetch,
}: PlantStoreClientOptions): PlantStoreClient {
  const client = createClient<paths>({
    baseUrl,
    fetch,
    headers: token ? { Authorization: `Bearer ${token}` } : {},
    // bigints as JSON numbers, digit for digit
    bodySerializer: (body: unknown) => stringify(body) ?? '',
  });
  client.use(exactInt64Answers);
  return client;
}

/** The answer again, whose `json()` gives the value already read, for openapi-fetch to take. */
function answerWithValue(
  response: Response,
  text: string,
  value: unknown,
): Response {
  return Object.defineProperty(new Response(text, response), 'json', {
    value: () => Promise.resolve(value),
  });
}

/**
 * Reads a JSON answer with lossless-json and turns the numbers at the operation's int64 fields
 * (INT64_FIELDS, from the document) into bigints, and every other number into a number.
 */
const exactInt64Answers: Middleware = {
  async onResponse({ request, response, schemaPath }) {
    const fields =
      INT64_FIELDS[`${request.method} ${schemaPath} ${response.status}`];
    const type = response.headers.get('content-type') ?? '';
    if (!fields || !type.startsWith('application/json')) return undefined;
    const text = await response.text();
    const value = convert(parse(text), fields, '');
    return answerWithValue(response, text, value);
  },
};

function convert(
  value: unknown,
  fields: readonly string[],
  at: string,
): unknown {
  if (isLosslessNumber(value)) {
    return fields.includes(at) ? BigInt(value.toString()) : value.valueOf();
  }
  if (Array.isArray(value)) {
    return value.map((item) => convert(item, fields, `${at}[]`));
  }
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [
        key,
        convert(item, fields, `${at}.${key}`),
      ]),
    );
  }
  return value;
}
