import { getSchemaPath, type OpenAPIObject } from '@nestjs/swagger';
import type { OperationObject, ResponseObject } from '@nestjs/swagger';
import { ErrorBody } from '../common/errors/error-body.dto';
import { errorExamples } from '../common/errors/error-examples';
import { IDEMPOTENCY_KEY_HEADER, MAX_KEY_LENGTH } from './idempotency-key';
import {
  IN_FLIGHT_MESSAGE,
  KEY_REUSED_MESSAGE,
  REPLAYED_HEADER,
  TAKEN_OVER_MESSAGE,
} from './idempotency.runner';

const IN_FLIGHT = errorExamples(409, {
  'Same key, first request still running': IN_FLIGHT_MESSAGE,
  'Taken over by a repeat': TAKEN_OVER_MESSAGE,
});

const BAD_KEY = errorExamples(400, {
  'Key used for another request': KEY_REUSED_MESSAGE,
  'Key not visible ASCII': `${IDEMPOTENCY_KEY_HEADER} must be visible ASCII characters (no spaces), got " " at character 4`,
  'Key too long': `${IDEMPOTENCY_KEY_HEADER} must be 1 to ${MAX_KEY_LENGTH} characters long, got 300`,
});

/** The answers a repeat may get: those of the handler, not of the checks before it (401, 403, 429). */
const REPLAYABLE = /^(2..|4(?!01|03|29)..)$/;

const takesKey = (operation: OperationObject) =>
  (operation.parameters ?? []).some(
    (parameter) =>
      'in' in parameter &&
      parameter.in === 'header' &&
      parameter.name === IDEMPOTENCY_KEY_HEADER,
  );

/**
 * What `@Idempotent()` adds to an operation's answers (docs/decisions.md, "Idempotency keys"):
 * `Idempotent-Replayed` on every answer that a repeat may get (2xx, and the 4xx of the handler), the 409 of a repeat
 * while the first runs (with Retry-After), and the 400s of a key that is malformed or was used
 * for another request. An operation that declares a 409 of its own keeps it, with these beside.
 */
export function declareIdempotentOperations(document: OpenAPIObject): void {
  document.components = {
    ...document.components,
    headers: {
      ...document.components?.headers,
      [REPLAYED_HEADER]: {
        description: `\`true\` on the stored answer of an earlier request with the same ${IDEMPOTENCY_KEY_HEADER}, method, path and body; absent on a first answer`,
        schema: { type: 'string', enum: ['true'] },
      },
    },
  };
  const replayed = { $ref: `#/components/headers/${REPLAYED_HEADER}` };
  for (const item of Object.values(document.paths)) {
    const operation = item.post;
    if (!operation || !takesKey(operation)) continue;
    const { responses } = operation;
    for (const [status, example] of [
      ['409', IN_FLIGHT],
      ['400', BAD_KEY],
    ] as const) {
      const declared = responses[status] as ResponseObject | undefined;
      const content = declared?.content?.['application/json'];
      if (content) {
        content.examples = { ...content.examples, ...example };
        continue;
      }
      responses[status] = {
        description:
          status === '409'
            ? `A request with this ${IDEMPOTENCY_KEY_HEADER} is still being processed; nothing was changed by this one: send it again after Retry-After seconds`
            : `The ${IDEMPOTENCY_KEY_HEADER} is malformed or was used for another request; nothing was changed`,
        content: {
          'application/json': {
            schema: { $ref: getSchemaPath(ErrorBody) },
            examples: example,
          },
        },
      };
    }
    (responses['409'] as ResponseObject).headers = {
      ...(responses['409'] as ResponseObject).headers,
      'Retry-After': { $ref: '#/components/headers/Retry-After' },
    };
    for (const [status, response] of Object.entries(responses)) {
      if (!response || '$ref' in response || !REPLAYABLE.test(status)) continue;
      response.headers = { ...response.headers, [REPLAYED_HEADER]: replayed };
    }
  }
}
