import type { INestApplication } from '@nestjs/common';
import {
  DocumentBuilder,
  getSchemaPath,
  SwaggerModule,
  type OpenAPIObject,
} from '@nestjs/swagger';
import type { ResponseObject } from '@nestjs/swagger';
import swaggerPluginMetadata from '../metadata';
import { ScopeCatalogue } from '../platform/auth/scopes';
import { INT64_MAX, INT64_MIN } from '../platform/common/json/int64';
import { DEFAULT_PAGE_SIZE } from '../modules/plants/dto/list-plants-query.dto';
import { ErrorBody } from '../platform/common/errors/error-body.dto';
import { errorExamples } from '../platform/common/errors/error-examples';
import { unknownQueryMessage } from '../platform/common/validation/known-query.guard';
import {
  BUSY_MESSAGE,
  DATABASE_UNAVAILABLE_MESSAGE,
  UNREACHABLE_BEFORE_CHANGE_MESSAGE,
  WRITE_OUTCOME_UNKNOWN_MESSAGE,
  INTERNAL_ERROR_MESSAGE,
} from '../platform/common/errors/error-answers';
import { tooManyConnectionsMessage } from '../platform/http/hardened-express.adapter';
import { SHUTTING_DOWN_MESSAGE } from '../platform/http/shutdown-gate.service';
import {
  REJECTED_TOKENS,
  tooManyRequests,
} from '../platform/rate-limit/rate-limiter';
import type { AppConfig } from '../platform/config/app.config';
import { configuredBaseUrl } from '../platform/http/public-base-url';
import { EventCatalogue } from '../platform/events/event-catalogue';
import { HEALTH_PROBE_PATHS } from '../platform/health/health-probes';
import { declareIdempotentOperations } from '../platform/idempotency/idempotency-openapi';
import { addWebhooks, listEventTypes } from './openapi-webhooks';

export const BEARER_AUTH = 'bearerAuth';

/**
 * The failures any operation can meet, declared once for the whole document (docs/decisions.md,
 * "Status codes"). 401 and 403 come with @RequireScopes, on the operations that need a token.
 */
const SERVICE_ERROR_RESPONSES = [
  {
    status: 429,
    description:
      'Rate limit hit (per token, or per client address without one); retry after Retry-After seconds',
    type: ErrorBody,
    examples: errorExamples(429, {
      'Too many requests': tooManyRequests(17_000, 'requests').message,
      'Blocked for guessing tokens': tooManyRequests(840_000, REJECTED_TOKENS)
        .message,
      'Too many connections': tooManyConnectionsMessage(256),
    }),
  },
  {
    status: 500,
    description:
      'A fault of the service itself; nothing internal is shown, and it is logged with its request id',
    type: ErrorBody,
    examples: errorExamples(500, { 'A fault': INTERNAL_ERROR_MESSAGE }),
  },
  {
    status: 503,
    description:
      'The database is unavailable or too busy, or the service is shutting down; try again (busy: after Retry-After seconds, nothing was changed)',
    type: ErrorBody,
    examples: errorExamples(503, {
      'Database busy': BUSY_MESSAGE,
      'Database unavailable': DATABASE_UNAVAILABLE_MESSAGE,
      'Database unavailable before a change': UNREACHABLE_BEFORE_CHANGE_MESSAGE,
      'Database lost during a change': WRITE_OUTCOME_UNKNOWN_MESSAGE,
      'Shutting down': SHUTTING_DOWN_MESSAGE,
    }),
  },
];

const SECONDS = {
  type: 'integer',
  format: 'int32',
  minimum: 0,
  maximum: 2147483647,
} as const;

/** Headers that answers carry, declared once and referred to from each response. */
const HEADERS = {
  'RateLimit-Limit': {
    description:
      'Requests the counter this request was charged to allows per window: its token, when proven, or else its client address',
    schema: { ...SECONDS, minimum: 1 },
  },
  'RateLimit-Remaining': {
    description: 'Requests left in the current window',
    schema: SECONDS,
  },
  'RateLimit-Reset': {
    description: 'Seconds until the current window ends',
    schema: SECONDS,
  },
  'Retry-After': {
    description:
      'Seconds to wait before trying again: until the rate limit lets requests through (429), for a busy database (503), or for the first request with the same Idempotency-Key to finish (409)',
    schema: { ...SECONDS, minimum: 1 },
  },
  'Access-Control-Allow-Origin': {
    description:
      "The request's Origin, when CORS_ORIGINS lists it; absent otherwise (CORS is off by default)",
    schema: { type: 'string', format: 'uri' },
  },
} as const;

const RATE_LIMIT_HEADERS = [
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
] as const;

const headerRef = (name: keyof typeof HEADERS) => ({
  $ref: `#/components/headers/${name}`,
});

/**
 * Every answer of an operation that is rate limited carries the RateLimit headers (a 429 also
 * Retry-After); the health probes are never limited, so they neither carry them nor answer
 * 429. Any answer may carry Access-Control-Allow-Origin.
 */
/**
 * Every operation answers 400 to a query parameter it does not take (KnownQueryGuard): where
 * an operation declares no 400 of its own, this is its 400; where it does, one more example.
 */
function declareUnknownQueryAnswers(document: OpenAPIObject): void {
  for (const item of Object.values(document.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const operation = item[method];
      if (!operation) continue;
      const takes = (operation.parameters ?? []).flatMap((parameter) =>
        'in' in parameter && parameter.in === 'query' ? [parameter.name] : [],
      );
      const example = errorExamples(400, {
        'Unknown query parameter': unknownQueryMessage('tags', takes),
      });
      const declared = operation.responses['400'] as ResponseObject | undefined;
      const content = declared?.content?.['application/json'];
      if (content) {
        const shown = JSON.stringify(content.examples ?? {}).includes(
          'is not one this operation takes',
        );
        if (!shown) content.examples = { ...content.examples, ...example };
        continue;
      }
      operation.responses['400'] = {
        description:
          'A query parameter the operation does not take; nothing was changed',
        content: {
          'application/json': {
            schema: { $ref: getSchemaPath(ErrorBody) },
            examples: example,
          },
        },
      };
    }
  }
}

function declareHeaders(document: OpenAPIObject): void {
  document.components = {
    ...document.components,
    headers: { ...document.components?.headers, ...HEADERS },
  };
  for (const [path, item] of Object.entries(document.paths)) {
    const limited = !HEALTH_PROBE_PATHS.has(path);
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const operation = item[method];
      if (!operation) continue;
      if (!limited) delete operation.responses['429'];
      for (const [status, response] of Object.entries(operation.responses)) {
        if (!response || '$ref' in response) continue;
        response.headers = {
          ...response.headers,
          ...(limited && /^[24]/.test(status)
            ? Object.fromEntries(
                RATE_LIMIT_HEADERS.map((name) => [name, headerRef(name)]),
              )
            : {}),
          ...(status === '429' || status === '503'
            ? { 'Retry-After': headerRef('Retry-After') }
            : {}),
          'Access-Control-Allow-Origin': headerRef(
            'Access-Control-Allow-Origin',
          ),
        };
      }
    }
  }
}

function codeList(values: readonly string[]): string {
  const quoted = values.map((value) => `\`${value}\``);
  return quoted.length < 2
    ? quoted.join('')
    : `${quoted.slice(0, -1).join(', ')} and ${quoted.at(-1)}`;
}

/** The spec's sentence, then what a first-time reader needs before "Try it out". */
const description = (
  scopes: ScopeCatalogue,
  events: EventCatalogue,
) => `A sample API that uses a plant store as an example to demonstrate features in the OpenAPI specification

## Getting started

1. Get a token. On the machine that runs the service, in its folder:
   \`npm run --silent tokens -- create --name me | tail -n 1\`. It prints a \`pst_...\` token
   once; the service keeps only its hash.
2. Press **Authorize**, paste the token, then open an operation and press **Try it out**.

A token holds scopes: ${scopes.describe()}. \`tokens create\` grants ${codeList(scopes.defaults)} unless \`--scopes\` says otherwise.

## Ids

Plant ids are chosen by the client and are exact 64-bit integers, from ${INT64_MIN} to
${INT64_MAX}, written as plain JSON numbers both ways. A client that reads JSON into
doubles rounds ids beyond 2^53: read them as big integers. (This page shows larger ids as
JavaScript rounds them; the service never does.)

## Answers

| status | when |
| --- | --- |
| 200, 201, 204 | done |
| 400 | the request is not one the operation takes (a body larger than the service accepts included); nothing changed |
| 401 | no token, or an unknown, revoked or expired one |
| 403 | the token lacks the operation's scope |
| 404 | no such plant or subscription |
| 409 | a request with the same \`Idempotency-Key\` is still running; retry after \`Retry-After\` seconds |
| 429 | a rate limit; retry after \`Retry-After\` seconds |
| 500 | a fault of the service, logged with the request's \`X-Request-Id\` |
| 503 | the database is busy (nothing changed; retry after \`Retry-After\` seconds) or unavailable, or the service is shutting down; retry |

Every failure is an Error object, \`{"error": <status>, "message": "<what is wrong and where>"}\`.
Every limited answer carries \`RateLimit-Limit\`, \`RateLimit-Remaining\` and \`RateLimit-Reset\`.

## Retries

Send an \`Idempotency-Key\` header (a UUID of your own, one per create) with every create you may
have to send again: after a dropped connection, a timeout, or a 503. A repeat with the same key,
path and body gets the first answer, byte for byte, with \`Idempotent-Replayed: true\`, and
changes nothing; while the first still runs, 409 with \`Retry-After\`; the same key with
another body, 400. Without a key, a retried plant create gets 400 "already exists", whoever
made the plant. Keys are kept for 24 hours by default, per token.

## Lists

\`GET /plants\` returns plants in ascending id order, \`limit\` at a time (${DEFAULT_PAGE_SIZE} by default), fewer
when their JSON would pass the page size bound. When more follow, the \`Link\` header names the
next page (\`rel="next"\`): follow it, or pass the last id you got as \`after\`.

## Webhooks

With a token holding \`webhooks:manage\`, \`POST /webhooks/subscriptions\` subscribes a URL to
${codeList(events.types)}. Each event is POSTed to it, signed the Standard Webhooks
way with the subscription's \`whsec_\` secret, and retried with backoff until a 2xx answer.
The events and their bodies are listed under **Webhooks** below.`;

/**
 * What the Swagger CLI plugin reads from the types, which an SWC build cannot see (generated
 * into src/metadata.ts by npm run openapi:generate): applied to the classes once a process.
 */
let pluginMetadataLoaded: Promise<void> | undefined;

/** The service's OpenAPI 3.1 document, generated from its controllers, DTOs and events. */
export async function buildOpenApiDocument(
  app: INestApplication,
  config: AppConfig,
): Promise<OpenAPIObject> {
  pluginMetadataLoaded ??= SwaggerModule.loadPluginMetadata(
    swaggerPluginMetadata,
  );
  await pluginMetadataLoaded;
  const scopes = app.get(ScopeCatalogue);
  const events = app.get(EventCatalogue);
  const document = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setOpenAPIVersion('3.1.0')
      .setTitle('OpenAPI Plant Store')
      .setDescription(description(scopes, events))
      .setVersion('1.0.0')
      // PUBLIC_BASE_URL; the words name the environments it may be, for API inventories
      .addServer(
        configuredBaseUrl(config),
        'The plant store service, as deployed: production, staging or local',
      )
      // addSecurity, not addBearerAuth, which would declare the opaque tokens to be JWTs
      .addSecurity(BEARER_AUTH, {
        type: 'http',
        scheme: 'bearer',
        description:
          'An API token (pst_...) issued by `node dist/cli.js tokens create`; or, where the service is set up with an identity provider (OIDC_ISSUER), an access token (a JWT) that the provider issued for this service, its scopes in its `scope` or `scp` claim. Scopes: ' +
          scopes.describe(),
      })
      .addSecurityRequirements(BEARER_AUTH)
      .addGlobalResponse(...SERVICE_ERROR_RESPONSES)
      .addTag('plants', 'Plants in the store')
      .addTag('webhooks', 'Subscriptions to the events the service publishes')
      .addTag('health', 'Liveness and readiness probes')
      .build(),
    { extraModels: events.events.map(({ payload }) => payload) },
  );
  // OpenAPI 3.1 names a license by its SPDX identifier; DocumentBuilder only knows name and url
  document.info.license = {
    name: 'MIT',
    identifier: 'MIT',
  } as typeof document.info.license;
  // the audience of the server, for API inventories: the public one, not an internal one
  document.servers = document.servers?.map((server) => ({
    ...server,
    'x-internal': false,
  }));
  listEventTypes(document, events.types);
  addWebhooks(document, events);
  declareUnknownQueryAnswers(document);
  declareIdempotentOperations(document);
  declareHeaders(document);
  return document;
}
